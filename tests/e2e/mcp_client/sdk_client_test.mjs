// `deskd mcp` under the official TypeScript SDK client (@modelcontextprotocol/sdk, pinned by
// package-lock.json beside this file): initialize, list, every tool, cancellation of a running
// command (checked from the desk's side: the file it would write later never appears),
// progress that keeps a short timeout from firing, and bad input on the wire, where every line
// deskd writes must be one the SDK's own reader accepts (it drops, for one, an error whose id
// is null). Run by ctest with `node --test`; DESKD_BINARY names the deskd under test.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { deskdBinary, importFrom, sleep, temporaryDesk } from './support.mjs';

const SDK = '@modelcontextprotocol/sdk';
const { Client } = await importFrom(SDK, 'dist/esm/client/index.js');
const { StdioClientTransport } = await importFrom(SDK, 'dist/esm/client/stdio.js');
const { ReadBuffer } = await importFrom(SDK, 'dist/esm/shared/stdio.js');
const { McpError, LATEST_PROTOCOL_VERSION } = await importFrom(SDK, 'dist/esm/types.js');

const TOOLS = ['bash', 'bash_background', 'check_background', 'bash_restart', 'read_file', 'write_file',
  'edit_file', 'list_directory', 'propose_file_change'];

describe('deskd mcp under the TypeScript SDK client', () => {
  const desk = temporaryDesk();
  const transport = new StdioClientTransport({
    command: deskdBinary(),
    args: desk.arguments('--timeout', '20', '--progress-interval', '0.2'),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'deskd-e2e', version: '1.0.0' });
  const clientErrors = [];
  client.onerror = (error) => clientErrors.push(String(error));
  const text = (result) => result.content.map((piece) => piece.text).join('');

  before(async () => { await client.connect(transport); });
  after(async () => {
    await client.close();
    desk.remove();
  });

  test('initializes with the newest revision and says who it is', () => {
    assert.equal(LATEST_PROTOCOL_VERSION, '2025-11-25');
    assert.equal(client.getServerVersion().name, 'deskd');
    assert.deepEqual(client.getServerCapabilities().tools, { listChanged: false });
  });

  test('lists every tool with a title, annotations and an output schema', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), TOOLS);
    for (const tool of tools) {
      assert.ok(tool.title && tool.title !== tool.name, `${tool.name} has a title`);
      assert.equal(tool.annotations.title, tool.title, 'Claude Code reads only annotations.title');
      assert.equal(tool.outputSchema.type, 'object');
      for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
        assert.equal(typeof tool.annotations[hint], 'boolean', `${tool.name}.${hint}`);
      }
    }
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations]));
    assert.equal(byName.read_file.readOnlyHint, true);
    assert.equal(byName.list_directory.readOnlyHint, true);
    assert.equal(byName.bash.readOnlyHint, false);
    assert.equal(byName.bash.openWorldHint, false, 'the sandbox has no network but its loopback');
    assert.equal(byName.propose_file_change.destructiveHint, false);
  });

  // The SDK checks structuredContent against each outputSchema it listed.
  test('calls every tool', async () => {
    const call = (name, args) => client.callTool({ name, arguments: args });
    const echoed = await call('bash', { command: 'mkdir -p scratch notes && echo hi; exit 3' });
    assert.equal(echoed.isError, false);
    assert.equal(echoed.structuredContent.exit_status, 3);
    assert.match(text(echoed), /^hi\n/);

    const started = await call('bash_background', { command: 'echo from the background' });
    assert.equal(started.isError, false, text(started));
    const job = /job ([0-9a-f]{8})/.exec(text(started))[1];
    await sleep(300);
    const checked = await call('check_background', { job_id: job });
    assert.match(text(checked), /finished\nfrom the background/);

    const written = await call('write_file', { path: 'notes/plan.md', content: 'step one\n' });
    assert.equal(written.isError, false, text(written));
    const edited = await call('edit_file', { path: 'notes/plan.md', old_text: 'one', new_text: 'two' });
    assert.equal(edited.isError, false, text(edited));
    const read = await call('read_file', { path: 'notes/plan.md' });
    assert.match(text(read), /step two/);
    assert.equal(read.structuredContent.text, text(read));
    const listed = await call('list_directory', { path: 'notes' });
    assert.match(text(listed), /plan\.md/);
    const proposed = await call('propose_file_change', { path: 'README.md', content: 'new\n', reason: 'e2e' });
    assert.equal(proposed.isError, false, text(proposed));
    const secret = await call('read_file', { path: '.env' });
    assert.equal(secret.isError, true);
    assert.doesNotMatch(text(secret), new RegExp(desk.secret));
    const restarted = await call('bash_restart', {});
    assert.equal(restarted.isError, false);
    assert.equal(readFileSync(join(desk.directory, 'notes/plan.md'), 'utf8'), 'step two\n');
  });

  // SEP-1303 (2025-11-25, which this SDK speaks): arguments the schema refuses are a tool
  // error the model reads and can correct; an unknown tool stays a protocol error.
  test('bad arguments are tool errors naming the fault; an unknown tool is a JSON-RPC error', async () => {
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
      (error) => error instanceof McpError && error.code === -32602 && /Unknown tool: no_such_tool/.test(error.message));
    const cases = [
      ['bash', { command: 5 }, /'command' must be a string/],
      ['bash', { command: 'true', cwd: '/' }, /'cwd' is not an argument/],
      ['read_file', { path: 'x', offset: 0 }, /'offset' must be at least 1/],
    ];
    for (const [name, args, named] of cases) {
      const result = await client.callTool({ name, arguments: args });
      assert.equal(result.isError, true, JSON.stringify(result));
      assert.match(text(result), named);
      assert.deepEqual(result.structuredContent, { text: text(result), truncated: false, is_error: true });
    }
  });

  test('progress keeps a short timeout from firing while a command runs', async () => {
    const reports = [];
    const result = await client.callTool({ name: 'bash', arguments: { command: 'sleep 1.5; echo done' } }, undefined, {
      timeout: 700,
      resetTimeoutOnProgress: true,
      onprogress: (progress) => reports.push(progress),
    });
    assert.match(text(result), /^done\n/);
    assert.ok(reports.length >= 3, `progress reports: ${JSON.stringify(reports)}`);
    for (let index = 1; index < reports.length; ++index) assert.ok(reports[index].progress > reports[index - 1].progress);
    assert.match(reports[0].message, /bash is still running/);
  });

  test('cancelling a call stops its command in the sandbox', async () => {
    const late = join(desk.directory, 'scratch', 'late');
    assert.ok(existsSync(join(desk.directory, 'scratch')), 'the check below would pass vacuously');
    const abort = new AbortController();
    const cancelled = client.callTool({ name: 'bash', arguments: { command: 'sleep 1.5; touch scratch/late' } },
      undefined, { signal: abort.signal });
    await sleep(400);
    abort.abort('the user changed their mind');
    await assert.rejects(cancelled);
    await sleep(2000);
    assert.equal(existsSync(late), false, 'the command ran on after its cancellation');
    // The next call is answered at once (it does not wait behind the old command), and no
    // late reply of the cancelled one confuses the client.
    const next = await client.callTool({ name: 'bash', arguments: { command: 'echo next' } }, undefined, { timeout: 3000 });
    assert.match(text(next), /^next\n/);
    assert.deepEqual(clientErrors, [], stderr);
  });
});

// Raw lines, for what a client cannot send through the SDK; every line deskd writes back is
// read with the SDK's own ReadBuffer, which throws for anything it would drop.
describe('deskd mcp on the wire, read by the SDK', () => {
  const desk = temporaryDesk();
  after(() => desk.remove());

  async function exchange(lines, replies) {
    const deskd = spawn(deskdBinary(), desk.arguments(), { stdio: ['pipe', 'pipe', 'pipe'] });
    const buffer = new ReadBuffer();
    const messages = [];
    let stderr = '';
    deskd.stderr.on('data', (chunk) => { stderr += chunk; });
    const done = new Promise((resolve) => deskd.on('close', resolve));
    deskd.stdout.on('data', (chunk) => {
      buffer.append(chunk);
      for (let message; (message = buffer.readMessage()) !== null;) messages.push(message);
    });
    for (const line of lines) deskd.stdin.write(`${line}\n`);
    for (let waited = 0; messages.length < replies && waited < 10000; waited += 50) await sleep(50);
    deskd.stdin.end();
    const status = await done;
    return { messages, stderr, status };
  }

  test('bad input is answered in ways the SDK accepts, and the session goes on', async () => {
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const { messages, stderr, status } = await exchange([
      initialize,
      'this is not json',
      `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"bash","arguments":{"command":${deep}}}}`,
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo \'cut \\ud83d\'"}}}',
      '{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}',
      '{"jsonrpc":"2.0","id":null,"method":"ping"}',
    ], 6);
    assert.equal(status, 0, stderr);
    assert.equal(messages.length, 6, JSON.stringify(messages));
    // Replies come as calls end, not in order.
    const byId = (id) => messages.find((message) => message.id === id);
    const idless = messages.filter((message) => !('id' in message));
    assert.equal(byId(0).result.protocolVersion, '2025-11-25');
    assert.deepEqual(idless.map((message) => message.error.code).sort(), [-32700, -32600].sort(),
      'unparseable lines and a null id get errors without an id, never a null one');
    assert.equal(byId('deep').error.code, -32700);
    assert.match(byId('deep').error.message, /at most 64/);
    assert.equal(byId(7).result.content[0].text, 'cut \ufffd\n[exit status 0]');
    // The largest id the SDK takes (its ids are safe integers); larger ones come back as sent
    // too (the unit tests), but the SDK would refuse to read them.
    assert.deepEqual(byId(9007199254740991).result, {});
    assert.match(stderr, /'id' must be a string or a number/, 'the null id is logged');
  });

  test('an older client is answered with the newest revision and decides', async () => {
    const { messages } = await exchange([JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'old', version: '1' } } })], 1);
    assert.equal(messages[0].result.protocolVersion, '2025-11-25');
  });
});
