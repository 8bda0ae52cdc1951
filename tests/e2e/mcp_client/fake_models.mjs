// Loopback model servers for driving real MCP hosts (Claude Code, Codex) offline: each
// answers the host's model requests from a script of tool calls, one per round, and keeps
// every request so that a test can read what the host handed the model (the tool results).
//
// Wire formats, as documented:
// - Anthropic Messages streaming (https://docs.anthropic.com/en/api/messages-streaming):
//   message_start, content_block_start/delta/stop (text_delta, input_json_delta),
//   message_delta with stop_reason, message_stop; a non-streaming request gets the Message.
// - OpenAI Responses streaming (https://platform.openai.com/docs/api-reference/responses-streaming):
//   response.created, response.output_item.added/done (message, function_call),
//   response.output_text.delta, response.function_call_arguments.delta/done, response.completed.

import { createServer } from 'node:http';

/**
 * Starts a server on 127.0.0.1. `next(request)` returns the next step for a model request
 * (its parsed body): { call: { name, input } } or { text }. Resolves to { url, requests, close }.
 */
function listen(handle) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      let parsed = null;
      try { parsed = body ? JSON.parse(body) : null; } catch { /* kept as text */ }
      requests.push({ method: req.method, url: req.url, body: parsed });
      handle(req, res, parsed);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((done) => { server.closeAllConnections(); server.close(done); }),
  })));
}

function streamEvents(res, events, named = true) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events) res.write(`${named ? `event: ${event.type}\n` : ''}data: ${JSON.stringify(event)}\n\n`);
  res.end();
}

/** A fake Anthropic Messages API. `next(body)` gets every request that offers tools. */
export function fakeAnthropic(next) {
  let count = 0;
  return listen((req, res, body) => {
    if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not here' } }));
      return;
    }
    if (req.url.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 10 }));
      return;
    }
    // Side requests (titles, summaries) offer no tools: they get a word of text.
    const step = body?.tools?.length ? next(body) : { text: 'ok' };
    const id = `toolu_${++count}`;
    const block = step.call ? { type: 'tool_use', id, name: step.call.name, input: step.call.input } : { type: 'text', text: step.text };
    const stop = step.call ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: 10, output_tokens: 5 };
    const message = { id: `msg_${count}`, type: 'message', role: 'assistant', model: body?.model ?? 'claude', stop_sequence: null };
    if (!body?.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...message, content: [block], stop_reason: stop, usage }));
      return;
    }
    const start = step.call ? { ...block, input: {} } : { type: 'text', text: '' };
    const delta = step.call
      ? { type: 'input_json_delta', partial_json: JSON.stringify(step.call.input) }
      : { type: 'text_delta', text: step.text };
    streamEvents(res, [
      { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: start },
      { type: 'content_block_delta', index: 0, delta },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } },
      { type: 'message_stop' },
    ]);
  });
}

/** A fake OpenAI Responses API (POST /v1/responses, streaming). */
export function fakeResponses(next) {
  let count = 0;
  return listen((req, res, body) => {
    if (req.method !== 'POST' || !req.url.endsWith('/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'not here', type: 'invalid_request_error' } }));
      return;
    }
    const step = body?.tools?.length ? next(body) : { text: 'ok' };
    const id = `resp_${++count}`;
    const item = step.call
      ? { type: 'function_call', id: `fc_${count}`, call_id: `call_${count}`, name: step.call.name,
        ...(step.call.namespace && { namespace: step.call.namespace }),
        arguments: JSON.stringify(step.call.input), status: 'completed' }
      : { type: 'message', id: `msg_${count}`, role: 'assistant', status: 'completed',
        content: [{ type: 'output_text', text: step.text, annotations: [] }] };
    const response = { id, object: 'response', model: body?.model ?? 'gpt', status: 'in_progress', output: [] };
    const events = [{ type: 'response.created', response }, { type: 'response.output_item.added', output_index: 0,
      item: step.call ? { ...item, arguments: '', status: 'in_progress' } : { ...item, content: [], status: 'in_progress' } }];
    if (step.call) {
      events.push({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: 0, delta: item.arguments });
      events.push({ type: 'response.function_call_arguments.done', item_id: item.id, output_index: 0, arguments: item.arguments });
    } else {
      events.push({ type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta: step.text });
    }
    events.push({ type: 'response.output_item.done', output_index: 0, item });
    events.push({ type: 'response.completed', response: { ...response, status: 'completed', output: [item],
      usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15, input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 } } } });
    streamEvents(res, events);
  });
}
