#pragma once
// `deskd doctor`: says which isolation this host offers deskd's sandbox, with the fix for
// each missing piece, and whether the host leaves the desk uid range to deskd.

#include "runner/app/deskd_command.h"

// add_doctor_command (deskd_command.h) adds it to deskd's parser. It prints one line per
// check (or, with --json, a JSON array of the checks) and a verdict. With --config F (by
// default /etc/deskd/deskd.toml, when it exists) the desk uid range is F's (its desks' own
// running processes excepted), else the default. Exits 0 when a full sandbox can start on
// this host, 1 when it cannot, 2 for bad usage or a config with problems (which are printed).
