#pragma once
// `deskd serve --config F`: the daemon. add_serve_command (deskd_command.h) adds it to
// deskd's parser.

#include "runner/app/deskd_command.h"
