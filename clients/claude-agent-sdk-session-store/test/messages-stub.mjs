// A local stand-in for the Anthropic Messages API on 127.0.0.1: it records every request body
// and answers POST /v1/messages with a streamed reply that `respond` picks from the request
// (the CLI always streams).
import http from 'node:http';

export async function startMessagesStub(respond) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url.startsWith('/v1/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"input_tokens":1}');
        return;
      }
      if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) {
        res.writeHead(404);
        res.end();
        return;
      }
      const parsed = JSON.parse(body);
      requests.push(parsed);
      const blocks = respond(parsed, requests.length);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (name, data) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      send('message_start', {
        type: 'message_start',
        message: { id: `msg_stub_${requests.length}`, type: 'message', role: 'assistant', model: parsed.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } },
      });
      blocks.forEach((b, index) => {
        if (b.type === 'text') {
          send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
          send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
        } else {
          send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
          send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
        }
        send('content_block_stop', { type: 'content_block_stop', index });
      });
      const stop = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
      send('message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 2 } });
      send('message_stop', { type: 'message_stop' });
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { requests, url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// items lists a request's messages as "role:type:text-or-id" strings, one per content block.
export function items(request) {
  const out = [];
  for (const m of request.messages) {
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    for (const b of blocks) {
      const what = b.type === 'text' ? b.text : b.type === 'tool_use' ? `${b.name}:${b.id}` : b.type === 'tool_result' ? `${b.tool_use_id}:${JSON.stringify(b.content)}` : '';
      out.push(`${m.role}:${b.type}:${what}`);
    }
  }
  return out;
}
