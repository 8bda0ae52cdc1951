#pragma once
// `deskd policy`: answers, for one path, what a desk's file tools would be allowed to do.
// add_policy_command (deskd_command.h) adds it to deskd's parser. It prints
// "allowed: <path>" and exits 0, prints "refused: <sentence>" and exits 1, or exits 2 for
// bad usage or a confinement that cannot be built.

#include "runner/app/deskd_command.h"
