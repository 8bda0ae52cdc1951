#pragma once
// `deskd mcp`: a desk's tools as a Model Context Protocol server on standard input and
// output, so any MCP client can use the desk's sandbox as its shell.

#include "runner/app/deskd_command.h"
