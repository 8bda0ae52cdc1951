// `deskd mcp` under the MCP Inspector's CLI mode (@modelcontextprotocol/inspector, pinned by
// package-lock.json beside this file; its client is the SDK's 2.x line, on its default legacy
// handshake): list the tools, call one, and have bad arguments answered as tool errors. Each
// run is `mcp-inspector --cli ... -- deskd mcp ...`, which starts deskd, initializes, does one
// thing, prints JSON and closes deskd's input.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { clientsFolder, deskdBinary, temporaryDesk } from './support.mjs';

const run = promisify(execFile);

describe('deskd mcp under the MCP Inspector CLI', () => {
  const desk = temporaryDesk();
  after(() => desk.remove());
  const inspector = join(clientsFolder(), 'node_modules', '.bin', 'mcp-inspector');

  async function inspect(...options) {
    try {
      const { stdout, stderr } = await run(inspector, ['--cli', ...options, '--', deskdBinary(), ...desk.arguments()],
        { timeout: 30000 });
      return { status: 0, stdout, stderr };
    } catch (failed) {
      return { status: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  test('tools/list shows every tool with its title, annotations and schemas', async () => {
    const { status, stdout, stderr } = await inspect('--method', 'tools/list');
    assert.equal(status, 0, stderr);
    const { tools } = JSON.parse(stdout);
    assert.equal(tools.length, 9);
    const bash = tools.find((tool) => tool.name === 'bash');
    assert.equal(bash.title, 'Run a command');
    assert.equal(bash.annotations.title, 'Run a command', 'Claude Code reads only annotations.title');
    assert.equal(bash.annotations.destructiveHint, true);
    assert.equal(bash.inputSchema.additionalProperties, false);
    assert.equal(bash.outputSchema.properties.exit_status.type, 'integer');
  });

  test('tools/call runs a command in the desk', async () => {
    const { status, stdout, stderr } = await inspect('--method', 'tools/call', '--tool-name', 'bash',
      '--tool-arg', 'command=pwd; (exit 4)');
    assert.equal(status, 0, stderr);
    const result = JSON.parse(stdout);
    assert.equal(result.isError, false);
    assert.equal(result.structuredContent.exit_status, 4);
    assert.equal(result.content[0].text, `${desk.directory}\n[exit status 4]`);
  });

  // SEP-1303: a tool error the model can read (the CLI then exits non-zero, "tool_is_error").
  test('an argument the tool does not take is a tool error naming it', async () => {
    const { status, stdout, stderr } = await inspect('--method', 'tools/call', '--tool-name', 'bash',
      '--tool-arg', 'command=echo ok', '--tool-arg', 'cwd=/');
    assert.notEqual(status, 0, stdout);
    assert.match(stdout, /"isError": true/);
    assert.match(stdout, /'cwd' is not an argument of this tool/);
  });

  test('an argument of the wrong type is a tool error naming it', async () => {
    // The Inspector turns "true" into a boolean.
    const { status, stdout, stderr } = await inspect('--method', 'tools/call', '--tool-name', 'bash',
      '--tool-arg', 'command=true');
    assert.notEqual(status, 0, stdout);
    assert.match(stdout, /"isError": true/);
    assert.match(stdout, /'command' must be a string/);
  });
});
