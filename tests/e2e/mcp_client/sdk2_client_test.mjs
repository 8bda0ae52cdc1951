// `deskd mcp` under the official TypeScript SDK 2.x client (@modelcontextprotocol/client,
// pinned by package-lock.json beside this file), in each way it connects: pinned to the
// 2026-07-28 revision (server/discover, then every request with its _meta and no
// initialize), 'auto' (it probes with server/discover and stays modern), and its default
// legacy handshake (initialize, 2025-11-25). In each: the tools listed with their titles,
// a command run, bad arguments answered as a tool error the model can read (SEP-1303), an
// unknown tool refused, progress, cancellation. A client pinned to a revision deskd lacks is
// told which ones it speaks (-32022). Run by ctest with `node --test`.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { deskdBinary, importFrom, sleep, temporaryDesk } from './support.mjs';

const CLIENT = '@modelcontextprotocol/client';
const { Client, ProtocolError } = await importFrom(CLIENT, 'dist/index.mjs');
const { StdioClientTransport } = await importFrom(CLIENT, 'dist/stdio.mjs');

const text = (result) => result.content.map((piece) => piece.text).join('');

const connections = [
  // Cancellation is checked once (it waits for the command it stopped); progress in each.
  { name: 'pinned to 2026-07-28', options: { versionNegotiation: { mode: { pin: '2026-07-28' } } }, version: '2026-07-28',
    cancels: true },
  { name: 'auto (server/discover, then modern)', options: { versionNegotiation: { mode: 'auto' } }, version: '2026-07-28' },
  { name: 'legacy handshake', options: {}, version: '2025-11-25' },
];

for (const connection of connections) {
  describe(`deskd mcp under the SDK 2.x client, ${connection.name}`, () => {
    const desk = temporaryDesk();
    const transport = new StdioClientTransport({
      command: deskdBinary(),
      args: desk.arguments('--timeout', '20', '--progress-interval', '0.2'),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk) => { stderr += chunk; });
    const client = new Client({ name: 'deskd-e2e-sdk2', version: '1.0.0' }, connection.options);
    const clientErrors = [];
    client.onerror = (error) => clientErrors.push(String(error));

    before(async () => { await client.connect(transport); });
    after(async () => {
      await client.close();
      desk.remove();
    });

    test('negotiates the revision and says who it is', () => {
      assert.equal(client.getNegotiatedProtocolVersion(), connection.version);
      assert.equal(client.getServerVersion().name, 'deskd');
      assert.deepEqual(client.getServerCapabilities().tools, { listChanged: false });
    });

    test('lists every tool with its title in annotations too', async () => {
      const { tools } = await client.listTools();
      assert.equal(tools.length, 9);
      for (const tool of tools) {
        assert.ok(tool.title && tool.title !== tool.name, tool.name);
        assert.equal(tool.annotations.title, tool.title, `${tool.name}: annotations.title`);
      }
    });

    test('runs a command; the text and structuredContent say the same', async () => {
      const result = await client.callTool({ name: 'bash', arguments: { command: 'echo hi; (exit 3)' } });
      assert.equal(result.isError, false);
      assert.equal(text(result), 'hi\n[exit status 3]');
      assert.deepEqual(result.structuredContent, { text: text(result), truncated: false, is_error: false, exit_status: 3 });
    });

    test('bad arguments are a tool error that names them (SEP-1303)', async () => {
      const result = await client.callTool({ name: 'bash', arguments: { command: 'true', cwd: '/' } });
      assert.equal(result.isError, true);
      assert.match(text(result), /Invalid arguments for tool bash: 'cwd' is not an argument/);
      assert.equal(result.structuredContent.is_error, true);
      assert.equal(result.structuredContent.text, text(result));
    });

    test('an unknown tool is a protocol error', async () => {
      await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
        (error) => error instanceof ProtocolError && error.code === -32602 && /Unknown tool: no_such_tool/.test(error.message));
    });

    test('progress keeps a short timeout from firing, and a cancelled command stops', async () => {
      const reports = [];
      const slow = await client.callTool({ name: 'bash', arguments: { command: 'mkdir -p scratch; sleep 1.2; echo done' } },
        { timeout: 700, resetTimeoutOnProgress: true, onprogress: (progress) => reports.push(progress) });
      assert.match(text(slow), /^done\n/);
      assert.ok(reports.length >= 2, JSON.stringify(reports));
      if (!connection.cancels) return;

      const abort = new AbortController();
      const cancelled = client.callTool({ name: 'bash', arguments: { command: 'sleep 1.5; touch scratch/late' } },
        { signal: abort.signal });
      await sleep(400);
      abort.abort('changed my mind');
      await assert.rejects(cancelled);
      await sleep(1800);
      assert.equal(existsSync(join(desk.directory, 'scratch', 'late')), false, 'the command ran on');
      assert.deepEqual(clientErrors, [], stderr);
    });
  });
}

describe('a client pinned to a revision deskd does not speak', () => {
  const desk = temporaryDesk();
  after(() => desk.remove());

  test('is told the revisions deskd speaks (-32022)', async () => {
    const transport = new StdioClientTransport({ command: deskdBinary(), args: desk.arguments(), stderr: 'pipe' });
    const client = new Client({ name: 'future', version: '1' }, { versionNegotiation: { mode: { pin: '2099-01-01' } } });
    await assert.rejects(client.connect(transport), (error) => {
      assert.equal(error.code, -32022, String(error));
      assert.deepEqual(error.data?.supported ?? error.supported, ['2026-07-28', '2025-11-25', '2025-06-18'], JSON.stringify(error));
      return true;
    });
    await client.close().catch(() => {});
  });
});
