// What the MCP client end-to-end tests share: where scripts/setup installed the pinned
// clients (a missing or stale install fails the tests, it never skips them), the deskd
// binary under test, and a temporary desk with a secret to hide.

import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The folder where scripts/setup installed what `source` (a folder beside this file holding
 * package.json and package-lock.json) pins; throws when it is missing or stale.
 */
function installedFolder(folder, source) {
  const stamp = join(folder, '.installed');
  if (!existsSync(stamp)) {
    throw new Error(`the packages of ${source} are not installed in ${folder}: run scripts/setup test`);
  }
  const expected = createHash('sha256')
    .update(readFileSync(join(here, source, 'package.json')))
    .update(readFileSync(join(here, source, 'package-lock.json')))
    .digest('hex');
  if (readFileSync(stamp, 'utf8').trim() !== expected) {
    throw new Error(`the packages in ${folder} are not the ones ${source}/package-lock.json pins: run scripts/setup test`);
  }
  return folder;
}

/** The folder holding node_modules of the pinned clients; throws when it is missing or stale. */
export function clientsFolder() {
  return installedFolder(process.env.DESKD_MCP_CLIENTS ?? '/var/tmp/deskd-npm/mcp_client', '.');
}

/** The folder holding node_modules of the pinned hosts (hosts/); throws when missing or stale. */
export function hostsFolder() {
  return installedFolder(process.env.DESKD_MCP_HOSTS ?? '/var/tmp/deskd-npm/mcp_hosts', 'hosts');
}

/** Imports a file of an installed package, e.g. ('@modelcontextprotocol/sdk', 'dist/esm/client/index.js'). */
export async function importFrom(packageName, file) {
  return import(pathToFileURL(join(clientsFolder(), 'node_modules', packageName, file)).href);
}

/** The deskd binary under test (ctest passes it). */
export function deskdBinary() {
  const binary = process.env.DESKD_BINARY;
  if (!binary || !existsSync(binary)) throw new Error(`DESKD_BINARY must name the built deskd, not '${binary}'`);
  return binary;
}

/**
 * A temporary desk: <root>/desk with README.md and a hidden .env, world-readable so that the
 * sandbox's own uid (under a root deskd) can enter it. remove() deletes it.
 */
export function temporaryDesk() {
  const root = mkdtempSync('/var/tmp/deskd-mcp-client-');
  const directory = join(root, 'desk');
  mkdirSync(directory);
  mkdirSync(join(root, 'proposals'));
  for (const folder of [root, directory]) chmodSync(folder, 0o755);
  const secret = `deskd-mcp-client-secret-${process.pid}`;
  writeFileSync(join(directory, 'README.md'), 'This desk is for tests.\n');
  writeFileSync(join(directory, '.env'), `API_KEY=${secret}\n`);
  return {
    root,
    directory,
    secret,
    /** deskd mcp's arguments for this desk. */
    arguments: (...extra) => ['mcp', '--desk', directory, '--hide', join(directory, '.env'),
      '--proposals', join(root, 'proposals'), ...extra],
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Waits `milliseconds`. */
export const sleep = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));
