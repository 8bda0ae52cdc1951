// What `deskd mcp` writes under each protocol revision, validated against that revision's
// schema.json from the official specification repository (copied into schemas/, with the
// commit in schemas/SOURCE.md): every reply as a JSONRPCMessage, every result as the result
// type its method names, every progress notification, and every structuredContent against
// the outputSchema its tool listed. Ajv is the one the pinned SDK 1.x brings (draft-07 for
// 2025-06-18, 2020-12 after). Raw lines, so each revision's own shapes are what is checked:
// 2025-06-18 and 2025-11-25 after initialize, 2026-07-28 per request with its _meta.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

import { clientsFolder, deskdBinary, sleep, temporaryDesk } from './support.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const require = createRequire(join(clientsFolder(), 'node_modules', 'index.js'));
const Ajv07 = require('ajv').default;
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;

/** A validator per definition of one revision's schema.json. */
function revisionSchema(revision) {
  const schema = JSON.parse(readFileSync(join(here, 'schemas', revision, 'schema.json'), 'utf8'));
  const draft07 = revision === '2025-06-18';
  const ajv = new (draft07 ? Ajv07 : Ajv2020)({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(schema, 'mcp');
  const definitions = draft07 ? 'definitions' : '$defs';
  return (name, value) => {
    const validate = ajv.getSchema(`mcp#/${definitions}/${name}`);
    assert.ok(validate, `${revision} has no ${name}`);
    assert.ok(validate(value), `${revision} ${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
  };
}

/** Writes `lines` to a fresh `deskd mcp`, reads until `replies` responses came, closes it. */
async function exchange(desk, lines, replies) {
  const deskd = spawn(deskdBinary(), desk.arguments('--progress-interval', '0.1'), { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  deskd.stdout.on('data', (chunk) => { stdout += chunk; });
  deskd.stderr.on('data', (chunk) => { stderr += chunk; });
  const done = new Promise((resolve) => deskd.on('close', resolve));
  const messages = () => stdout.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line));
  for (const line of lines) deskd.stdin.write(`${JSON.stringify(line)}\n`);
  for (let waited = 0; messages().filter((m) => !('method' in m)).length < replies && waited < 15000; waited += 50) {
    await sleep(50);
  }
  deskd.stdin.end();
  assert.equal(await done, 0, stderr);
  return messages();
}

const clientInfo = { name: 'schema-check', version: '1' };
const request = (id, method, params) => ({ jsonrpc: '2.0', id, method, ...(params && { params }) });

/** The same calls under every revision: what each answers is checked by its own schema. */
function calls(params) {
  return [
    request('list', 'tools/list', params({})),
    request('ran', 'tools/call', params({ name: 'bash', arguments: { command: 'echo ran; exit 2' } })),
    request('slow', 'tools/call', params({ name: 'bash', arguments: { command: 'sleep 0.35; echo slept' } }, 'tok')),
    request('failed', 'tools/call', params({ name: 'read_file', arguments: { path: '.env' } })),
    request('bad', 'tools/call', params({ name: 'bash', arguments: { command: 5 } })),
    request('unknown', 'tools/call', params({ name: 'no_such_tool', arguments: {} })),
  ];
}

function checkCalls(revision, byId, notifications, check) {
  const tools = byId.list.result.tools;
  check('ListToolsResult', byId.list.result);
  assert.equal(tools.length, 9);
  for (const tool of tools) assert.equal(tool.annotations.title, tool.title, `${tool.name}: annotations.title`);
  const outputSchemas = Object.fromEntries(tools.map((tool) => [tool.name, tool.outputSchema]));
  const output = new Ajv2020({ strict: false, allErrors: true });
  for (const [id, tool] of [['ran', 'bash'], ['slow', 'bash'], ['failed', 'read_file']]) {
    const { result } = byId[id];
    check('CallToolResult', result);
    assert.ok(output.validate(outputSchemas[tool], result.structuredContent), `${id}: ${output.errorsText()}`);
    assert.equal(result.structuredContent.text, result.content[0].text, `${id}: the text block is the whole answer`);
    assert.equal(result.structuredContent.is_error, result.isError, `${id}: structuredContent says isError too`);
  }
  assert.equal(byId.ran.result.structuredContent.exit_status, 2);
  assert.equal(byId.failed.result.isError, true);
  assert.ok(notifications.length >= 1, 'progress while the slow call ran');
  for (const notification of notifications) check('ProgressNotification', notification);
  assert.equal(byId.unknown.error.code, -32602, 'an unknown tool is a protocol error in every revision');
  if (revision === '2025-06-18') {
    assert.equal(byId.bad.error.code, -32602, '2025-06-18 lists invalid arguments among protocol errors');
  } else {
    check('CallToolResult', byId.bad.result);
    assert.equal(byId.bad.result.isError, true, 'SEP-1303: a tool execution error');
    assert.match(byId.bad.result.content[0].text, /'command' must be a string/);
    assert.equal(byId.bad.result.structuredContent.is_error, true);
    assert.ok(output.validate(outputSchemas.bash, byId.bad.result.structuredContent), output.errorsText());
  }
}

describe('deskd mcp replies validate against each revision\'s schema.json', () => {
  const desk = temporaryDesk();
  after(() => desk.remove());

  for (const revision of ['2025-06-18', '2025-11-25']) {
    test(`${revision}, after initialize`, async () => {
      const check = revisionSchema(revision);
      const params = (body, token) => (token ? { ...body, _meta: { progressToken: token } } : body);
      const lines = [
        request(0, 'initialize', { protocolVersion: revision, capabilities: {}, clientInfo }),
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        request('ping', 'ping'),
        ...calls(params),
      ];
      const messages = await exchange(desk, lines, lines.length - 1);
      for (const message of messages) check('JSONRPCMessage', message);
      const byId = Object.fromEntries(messages.filter((m) => 'id' in m).map((m) => [m.id, m]));
      check('InitializeResult', byId[0].result);
      assert.equal(byId[0].result.protocolVersion, revision);
      check('EmptyResult', byId.ping.result);
      checkCalls(revision, byId, messages.filter((m) => m.method === 'notifications/progress'), check);
    });
  }

  test('2026-07-28, per request without initialize', async () => {
    const revision = '2026-07-28';
    const check = revisionSchema(revision);
    const meta = (version) => ({
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientInfo': clientInfo,
      'io.modelcontextprotocol/clientCapabilities': {},
    });
    const params = (body, token) => ({ ...body, _meta: { ...meta(revision), ...(token && { progressToken: token }) } });
    const lines = [
      request('discover', 'server/discover', { _meta: meta(revision) }),
      request('future', 'tools/list', { _meta: meta('2099-01-01') }),
      ...calls(params),
    ];
    const messages = await exchange(desk, lines, lines.length);
    for (const message of messages) check('JSONRPCMessage', message);
    const byId = Object.fromEntries(messages.filter((m) => 'id' in m).map((m) => [m.id, m]));
    check('DiscoverResult', byId.discover.result);
    assert.equal(byId.discover.result.supportedVersions[0], revision);
    check('UnsupportedProtocolVersionError', byId.future);
    assert.deepEqual(byId.future.error.data, { supported: byId.discover.result.supportedVersions, requested: '2099-01-01' });
    for (const reply of messages.filter((m) => 'result' in m)) {
      assert.equal(reply.result.resultType, 'complete');
      assert.equal(reply.result._meta['io.modelcontextprotocol/serverInfo'].name, 'deskd');
    }
    checkCalls(revision, byId, messages.filter((m) => m.method === 'notifications/progress'), check);
  });
});
