#pragma once
// `deskd run`: one desk, one message, on the built-in script model (or a script file) —
// the desk's turn runs for real: bash in its sandbox, the file tools under its policy.
// Prints what the desk does as it does it, and exits when the turn ends.
// add_run_command (deskd_command.h) adds it to deskd's parser; it exits 0 when the turn
// finished, 1 when it failed or was stopped, 2 for bad usage, 125 when the desk could not
// be set up.

#include "runner/app/deskd_command.h"
