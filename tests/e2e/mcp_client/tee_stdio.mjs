// Runs a command with its standard input copied, line by line, to a file: how a host test
// sees what an MCP host sent deskd (which revision it spoke) without changing a byte of it.
// Usage: node tee_stdio.mjs LOG COMMAND [ARGUMENTS...]

import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const [log, command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ['pipe', 'inherit', 'inherit'] });
process.stdin.on('data', (chunk) => {
  appendFileSync(log, chunk);
  child.stdin.write(chunk);
});
process.stdin.on('end', () => child.stdin.end());
child.on('exit', (status, signal) => process.exit(signal ? 128 : status ?? 1));
