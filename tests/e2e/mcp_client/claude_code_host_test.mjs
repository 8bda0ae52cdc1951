// `deskd mcp` under Claude Code (@anthropic-ai/claude-code, pinned by hosts/package-lock.json)
// as the MCP host, its model a fake Anthropic Messages server on loopback (fake_models.mjs),
// all offline. The fake model calls deskd's tools: with a bad argument, on a hidden file, and
// properly; the test reads what Claude Code handed the model back for each call, and what it
// sent deskd (copied by tee_stdio.mjs). Claude Code probes with server/discover and speaks
// 2026-07-28; a bad argument reaches the model as deskd's sentence with is_error (SEP-1303).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

import { fakeAnthropic } from './fake_models.mjs';
import { deskdBinary, hostsFolder, temporaryDesk } from './support.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Runs `command` with no standard input (Claude Code reads a piped one as more prompt). */
function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeout);
    child.on('close', (status) => {
      clearTimeout(timer);
      if (status === 0) resolve({ stdout, stderr });
      else reject(new Error(`${command} ended with ${status}: ${stderr}${stdout}`));
    });
  });
}

/** The platform binary (the wrapper's install script, which would copy it, does not run). */
function claudeBinary() {
  const binary = join(hostsFolder(), 'node_modules', '@anthropic-ai', `claude-code-${process.platform}-${process.arch}`, 'claude');
  if (!existsSync(binary)) throw new Error(`Claude Code has no binary for ${process.platform}-${process.arch} at ${binary}`);
  return binary;
}

/** The tool results in a Messages request, in order. */
const toolResults = (body) => body.messages.flatMap((message) =>
  (Array.isArray(message.content) ? message.content.filter((block) => block.type === 'tool_result') : []));
const resultText = (block) => (typeof block.content === 'string' ? block.content
  : block.content.map((piece) => piece.text ?? '').join(''));

describe('deskd mcp under Claude Code, driven by a fake model', () => {
  const desk = temporaryDesk();
  after(() => desk.remove());

  test('the model hears deskd\'s answers, errors included', async () => {
    const steps = [
      { name: 'mcp__deskd__bash', input: { command: 5 } },
      { name: 'mcp__deskd__read_file', input: { path: '.env' } },
      { name: 'mcp__deskd__bash', input: { command: 'echo from-claude-code' } },
    ];
    const model = await fakeAnthropic((body) => {
      const offered = body.tools.map((tool) => tool.name);
      const done = toolResults(body).length;
      if (done >= steps.length) return { text: 'all done' };
      // A request without deskd's tools is not the conversation's (or deskd is not connected
      // yet, which the test's end shows): never assert in here, it would leave Claude waiting.
      if (!offered.includes(steps[done].name)) return { text: `no ${steps[done].name}` };
      return { call: steps[done] };
    });
    const home = join(desk.root, 'home');
    mkdirSync(home);
    const wire = join(desk.root, 'wire.jsonl');
    const config = join(desk.root, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { deskd: { type: 'stdio', command: process.execPath,
      args: [join(here, 'tee_stdio.mjs'), wire, resolve(deskdBinary()), ...desk.arguments()] } } }));
    try {
      const { stdout } = await run(claudeBinary(), ['-p', 'Use the desk.', '--mcp-config', config, '--strict-mcp-config',
        '--allowedTools', 'mcp__deskd__bash,mcp__deskd__read_file', '--output-format', 'json'], {
        cwd: home,
        timeout: 90000,
        env: {
          PATH: process.env.PATH, HOME: home, ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'sk-fake',
          // Offline: no telemetry, no update check, and every tool offered at once (no search).
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', ENABLE_TOOL_SEARCH: 'false',
        },
      });
      assert.equal(JSON.parse(stdout).result, 'all done', stdout);
    } finally {
      await model.close();
    }

    const last = model.requests.filter((request) => request.body?.tools?.length).at(-1).body;
    const [bad, hidden, ran] = toolResults(last);
    assert.equal(bad.is_error, true, JSON.stringify(bad));
    assert.equal(resultText(bad), "Invalid arguments for tool bash: 'command' must be a string.");
    assert.equal(hidden.is_error, true, JSON.stringify(hidden));
    assert.doesNotMatch(resultText(hidden), new RegExp(desk.secret));
    assert.match(resultText(ran), /from-claude-code\\n\[exit status 0\]/, 'Claude Code hands the model structuredContent');

    const sent = readFileSync(wire, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    assert.equal(sent[0].method, 'server/discover');
    assert.equal(sent.some((message) => message.method === 'initialize'), false, 'no legacy handshake');
    for (const message of sent.filter((each) => each.method === 'tools/call')) {
      assert.equal(message.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
    }
  });
});
