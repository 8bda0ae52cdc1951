// `deskd mcp` under the Codex CLI (@openai/codex, pinned by hosts/package-lock.json) as the
// MCP host, its model a fake OpenAI Responses server on loopback (fake_models.mjs), all
// offline. The fake model calls deskd's tools (Codex offers them in a namespace, mcp__deskd):
// with a bad argument, on a hidden file, and properly; the test reads what Codex handed the
// model back for each call, and what it sent deskd (copied by tee_stdio.mjs).
//
// Codex 0.171 initializes with 2025-06-18, whose spec lists invalid arguments among protocol
// errors: deskd answers -32602 there, and Codex shows the model that error (with a backtrace
// of its own). Codex hands the model structuredContent rather than the text and drops
// isError: deskd's structuredContent says is_error itself.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

import { fakeResponses } from './fake_models.mjs';
import { deskdBinary, hostsFolder, temporaryDesk } from './support.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));

function codexLauncher() {
  const launcher = join(hostsFolder(), 'node_modules', '@openai', 'codex', 'bin', 'codex.js');
  if (!existsSync(launcher)) throw new Error(`Codex is not installed at ${launcher}`);
  return launcher;
}

/** Runs `command` with no standard input (`codex exec` reads a piped one as more prompt). */
function run(command, args, options) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeout);
    child.on('close', (status) => {
      clearTimeout(timer);
      if (status === 0) resolvePromise(output);
      else reject(new Error(`${command} ended with ${status}: ${output}`));
    });
  });
}

/** The function call outputs in a Responses request, in order, as text. */
const callOutputs = (body) => body.input.filter((item) => item.type === 'function_call_output').map((item) =>
  (typeof item.output === 'string' ? item.output : item.output.map((piece) => piece.text ?? '').join('\n')));

describe('deskd mcp under Codex, driven by a fake model', () => {
  const desk = temporaryDesk();
  after(() => desk.remove());

  test('the model hears deskd\'s answers, errors marked in structuredContent', async () => {
    const steps = [
      { namespace: 'mcp__deskd', name: 'bash', input: { command: 5 } },
      { namespace: 'mcp__deskd', name: 'read_file', input: { path: '.env' } },
      { namespace: 'mcp__deskd', name: 'bash', input: { command: 'echo from-codex' } },
    ];
    const model = await fakeResponses((body) => {
      const done = callOutputs(body).length;
      if (done >= steps.length) return { text: 'all done' };
      // Never assert in here: Codex would wait for an answer that does not come.
      const offered = body.tools.some((tool) => tool.type === 'namespace' && tool.name === 'mcp__deskd');
      return offered ? { call: steps[done] } : { text: 'no deskd tools' };
    });
    const home = join(desk.root, 'codex');
    mkdirSync(home);
    const wire = join(desk.root, 'wire.jsonl');
    const quoted = (text) => JSON.stringify(text);
    writeFileSync(join(home, 'config.toml'), [
      'model = "gpt-5-codex"',
      'model_provider = "fake"',
      '[model_providers.fake]',
      'name = "fake"',
      `base_url = ${quoted(`${model.url}/v1`)}`,
      'wire_api = "responses"',
      'env_key = "FAKE_MODEL_KEY"',
      '[mcp_servers.deskd]',
      `command = ${quoted(process.execPath)}`,
      `args = [${[join(here, 'tee_stdio.mjs'), wire, resolve(deskdBinary()), ...desk.arguments()].map(quoted).join(', ')}]`,
      // Codex asks before a tool that is not read-only; there is nobody to ask here.
      'default_tools_approval_mode = "approve"',
      '',
    ].join('\n'));
    try {
      const output = await run(process.execPath, [codexLauncher(), 'exec', '--skip-git-repo-check', 'Use the desk.'], {
        cwd: home,
        timeout: 90000,
        env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, FAKE_MODEL_KEY: 'sk-fake' },
      });
      assert.match(output, /all done/);
    } finally {
      await model.close();
    }

    const last = model.requests.filter((request) => request.body?.tools?.length).at(-1).body;
    const [bad, hidden, ran] = callOutputs(last);
    assert.match(bad, /-32602: Invalid arguments for tool bash: 'command' must be a string\./);
    const structured = (text) => JSON.parse(text.slice(text.indexOf('{')));
    assert.equal(structured(hidden).is_error, true, hidden);
    assert.doesNotMatch(hidden, new RegExp(desk.secret));
    assert.deepEqual(structured(ran), { text: 'from-codex\n[exit status 0]', truncated: false, is_error: false, exit_status: 0 });

    const sent = readFileSync(wire, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    assert.equal(sent[0].method, 'initialize');
    assert.equal(sent[0].params.protocolVersion, '2025-06-18');
  });
});
