#pragma once
// `deskd shell`: a person types commands into a desk's sandboxed bash and sees their output
// and status; with --json, a script drives any of the desk's tools, one JSON object a line.

#include "runner/app/deskd_command.h"
