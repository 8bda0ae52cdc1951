// A real `deskd serve` for the browser test: a config in a temporary folder under /var/tmp
// (a sandbox gets a fresh /tmp, so nothing a desk sees may live there) with desks on the
// script model, the web page on a loopback TCP address, and deskctl to ask for the login
// link. The same config as tests/e2e/daemon_fixture.cpp's ServeDaemon writes, in Node.

import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const here = fileURLToPath(new URL('.', import.meta.url));
const run = promisify(execFile);

/** A binary ctest names in the environment (DESKD_BINARY, DESKCTL_BINARY). */
export function binary(variable) {
  const path = process.env[variable];
  if (!path || !existsSync(path)) throw new Error(`${variable} must name the built binary, not '${path}'`);
  return path;
}

/** Imports puppeteer-core from where scripts/setup installed it; a missing or stale install throws. */
export async function importPuppeteer() {
  // Where scripts/setup put them: ${DESKD_NPM_DIR:-/var/tmp/deskd-npm}/web_browser.
  const folder = join(process.env.DESKD_NPM_DIR ?? '/var/tmp/deskd-npm', 'web_browser');
  const stamp = join(folder, '.installed');
  if (!existsSync(stamp)) throw new Error(`puppeteer-core is not installed in ${folder}: run scripts/setup test`);
  const expected = createHash('sha256')
    .update(readFileSync(join(here, 'package.json')))
    .update(readFileSync(join(here, 'package-lock.json')))
    .digest('hex');
  if (readFileSync(stamp, 'utf8').trim() !== expected) {
    throw new Error(`the packages in ${folder} are not the ones package-lock.json pins: run scripts/setup test`);
  }
  const entry = join(folder, 'node_modules', 'puppeteer-core', 'lib', 'esm', 'puppeteer', 'puppeteer-core.js');
  return (await import(pathToFileURL(entry).href)).default;
}

/** A loopback port nobody listens on right now. */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const sleep = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/**
 * deskd serve with `desks` ({name, script: the script model's JSON lines, settings: TOML
 * lines of its [[desk]] table, tables: TOML after its [desk.model]}), `tables` (such as an
 * [[api]]) after [sandbox], and its web page on 127.0.0.1. stop() ends deskd and removes
 * the folder.
 */
export async function startServe(desks, tables = '') {
  const folder = mkdtempSync('/var/tmp/deskd-web-');
  // World-readable: under a root deskd each sandbox runs as its desk's own uid and must enter.
  mkdirSync(join(folder, 'desks'));
  for (const path of [folder, join(folder, 'desks')]) chmodSync(path, 0o755);
  const port = await freePort();
  let config = '[runner]\nstate_folder = "state"\nsocket = "state/deskd.sock"\nshutdown_grace_seconds = 1\n' +
    `web_listen = "127.0.0.1:${port}"\n\n[sandbox]\ndisk_quota_mb = "none"\n\n${tables}\n`;
  for (const desk of desks) {
    const directory = join(folder, 'desks', desk.name);
    mkdirSync(directory);
    chmodSync(directory, 0o755);
    writeFileSync(join(directory, 'README.md'), 'This desk is for tests.\n');
    writeFileSync(join(directory, 'plan.md'), 'plan v1\n');
    writeFileSync(join(directory, '.env'), 'API_KEY=deskd-web-secret\n');
    writeFileSync(join(folder, `${desk.name}.jsonl`), desk.script);
    config += `[[desk]]\nname = "${desk.name}"\ndirectory = "desks/${desk.name}"\n` +
      `hidden_paths = ["desks/${desk.name}/.env"]\n${desk.settings ?? ''}\n[desk.model]\nscript = "${desk.name}.jsonl"\n\n` +
      `${desk.tables ?? ''}\n`;
  }
  writeFileSync(join(folder, 'deskd.toml'), config);
  const socket = join(folder, 'state', 'deskd.sock');
  const logPath = join(folder, 'deskd.log');
  const log = openSync(logPath, 'w');
  const deskd = spawn(binary('DESKD_BINARY'), ['serve', '--config', join(folder, 'deskd.toml')],
    { stdio: ['ignore', log, log] });
  let exited = null;
  deskd.on('exit', (code, signal) => { exited = { code, signal }; });

  const deskctl = async (...arguments_) => {
    const { stdout } = await run(binary('DESKCTL_BINARY'), ['--socket', socket, ...arguments_], { timeout: 30000 });
    return stdout;
  };
  const serve = {
    folder,
    origin: `http://127.0.0.1:${port}`,
    deskctl,
    deskDirectory: (name) => join(folder, 'desks', name),
    sessionPath: (name) => join(folder, 'state', 'desks', name, 'sessions', 'current.json'),
    log: () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : ''),
    /** A one-time login link from `deskctl web-url`. */
    loginUrl: async () => {
      const printed = await deskctl('web-url');
      const url = /https?:\/\/\S+/.exec(printed);
      if (!url) throw new Error(`deskctl web-url printed no link: ${printed}`);
      return url[0];
    },
    stop: async () => {
      if (exited === null) {
        deskd.kill('SIGTERM');
        for (let waited = 0; exited === null && waited < 15000; waited += 50) await sleep(50);
        if (exited === null) deskd.kill('SIGKILL');
      }
      rmSync(folder, { recursive: true, force: true });
    },
  };

  // Ready once the control socket answers and no desk is still starting (reading its journal).
  const deadline = Date.now() + 30000;
  for (;;) {
    if (exited !== null) throw new Error(`deskd serve exited (${JSON.stringify(exited)}):\n${serve.log()}`);
    try {
      const listed = JSON.parse(await deskctl('--json', 'desks'));
      if (listed.desks?.length === desks.length && listed.desks.every((desk) => desk.state !== 'starting')) break;
    } catch {
      // not answering yet
    }
    if (Date.now() > deadline) {
      await serve.stop();
      throw new Error(`deskd serve did not get ready in 30 s:\n${serve.log()}`);
    }
    await sleep(100);
  }
  return serve;
}
