// Tests ParleySession (../dist) with the real OpenAI Agents SDK against a live Session API.
// Run with `node --test` by the Go envtest suite
// (test/clients/agent_frameworks_test.go), which sets PARLEY_API_URL,
// PARLEY_NAMESPACE, PARLEY_CHECK_TOKEN (a token that may read, append and reset) and creates
// the conversations oa-roundtrip, oa-limits, oa-pop, oa-foreign and oa-run in the namespace.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';

import { Agent, run, setTracingDisabled, tool, Usage } from '@openai/agents';
import { newId, ParleyClient } from '@parley-dev/session-api';
import { z } from 'zod';

import { itemsOf, messageOf, ParleySession } from '../dist/index.js';

setTracingDisabled(true);
const env = process.env;
const ns = env.PARLEY_NAMESPACE;
const client = new ParleyClient({ url: env.PARLEY_API_URL, token: env.PARLEY_CHECK_TOKEN });
after(() => client.close());
const session = (conversation) => new ParleySession({ client, namespace: ns, conversation });

// Items of every kind the SDK keeps, with the members the neutral model has no field for.
const items = [
  { role: 'user', content: 'What is the weather in Paris? — «Grüße» 😀' },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'look at this' }, { type: 'input_image', image: 'https://example.com/a.png', detail: 'high' }] },
  { role: 'system', content: 'be brief' },
  { role: 'developer', content: '' },
  { type: 'reasoning', id: 'rs_1', content: [{ type: 'input_text', text: 'the user wants weather' }], rawContent: [{ type: 'reasoning_text', text: 'raw thought' }], providerData: { encrypted_content: 'abc==' } },
  { type: 'function_call', id: 'fc_1', callId: 'call_1', name: 'lookup', arguments: '{"city":"Paris","units":["c",1e21,5e-324]}', status: 'completed', providerData: { nested: { a: [1, null, true] } } },
  { type: 'function_call', callId: 'call_2', name: 'raw_args', arguments: 'not json {', status: 'in_progress' },
  { type: 'function_call', callId: '', name: '', arguments: '' },
  { type: 'function_call_result', callId: 'call_1', name: 'lookup', status: 'completed', output: '18 °C' },
  { type: 'function_call_result', callId: 'call_2', name: 'raw_args', status: 'incomplete', output: [{ type: 'input_text', text: 'part one' }, { type: 'input_image', image: { id: 'file_1' } }] },
  { type: 'function_call_result', callId: 'call_3', name: 'empty', status: 'completed', output: { type: 'text', text: '' } },
  { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', phase: 'final_answer', content: [{ type: 'output_text', text: 'It is 18 °C.', providerData: { annotations: [] } }, { type: 'refusal', refusal: 'no more' }] },
  { type: 'hosted_tool_call', id: 'ht_1', name: 'web_search', status: 'completed', arguments: '{}', output: 'results', providerData: { type: 'web_search_call' } },
  { type: 'computer_call', id: 'cc_1', callId: 'cc', status: 'completed', action: { type: 'click', x: 1, y: 2, button: 'left' } },
  { type: 'compaction', encrypted_content: 'opaque', created_by: 'server' },
  { type: 'unknown', id: 'u_1', providerData: { anything: 'goes' } },
];

describe('items and neutral messages', () => {
  it('every item comes back deep-equal from its message, as JSON carries it', () => {
    for (const item of items) {
      const wire = JSON.parse(JSON.stringify(messageOf(item, 'id')));
      assert.deepEqual(itemsOf(wire), [item]);
    }
  });

  it('puts what the model holds into blocks', () => {
    assert.deepEqual(messageOf(items[0], 'a').blocks, [{ type: 'text', text: items[0].content }]);
    assert.equal(messageOf(items[5], 'b').blocks[0].toolUseId, 'call_1');
    assert.deepEqual(messageOf(items[5], 'b').blocks[0].input, { city: 'Paris', units: ['c', 1e21, 5e-324] });
    assert.equal(messageOf(items[6], 'c').blocks[0].input, undefined, 'arguments that are no JSON object stay a string');
    assert.equal(messageOf(items[8], 'd').role, 'tool');
    assert.equal(messageOf(items[4], 'e').blocks[0].type, 'thinking');
    assert.deepEqual(messageOf(items[12], 'f').blocks, [], 'an item with no neutral form is kept whole in raw');
  });
});

describe('ParleySession against a live Session API', () => {
  it('round-trips every item deep-equal through the history, for this session and a new one', async () => {
    const s = session('oa-roundtrip');
    await s.addItems(items.slice(0, 5));
    await s.addItems(items.slice(5));
    assert.deepEqual(await s.getItems(), items);
    assert.deepEqual(await session('oa-roundtrip').getItems(), items);
    const { messages } = await client.allMessages(ns, 'oa-roundtrip');
    assert.equal(messages.length, items.length, 'one message per item');
    assert.deepEqual(messages.map((m) => m.role), ['user', 'user', 'system', 'system', 'assistant', 'assistant', 'assistant', 'assistant', 'tool', 'tool', 'tool', 'assistant', 'assistant', 'assistant', 'assistant', 'assistant']);
    assert.equal(await s.getSessionId(), (await client.conversation(ns, 'oa-roundtrip')).sessionId);
  });

  it('keeps order and answers the latest `limit` items', async () => {
    const s = session('oa-limits');
    const numbered = Array.from({ length: 7 }, (_, i) => ({ role: 'user', content: `item ${i}` }));
    for (const it of numbered) await s.addItems([it]);
    assert.deepEqual(await s.getItems(), numbered);
    assert.deepEqual(await s.getItems(3), numbered.slice(4));
    assert.deepEqual(await s.getItems(1), numbered.slice(6));
    assert.deepEqual(await s.getItems(0), []);
    assert.deepEqual(await s.getItems(100), numbered);
    await s.addItems([]);
    assert.equal((await s.getItems()).length, 7);
  });

  it('popItem removes the latest item from the history and clearSession clears it', async () => {
    const s = session('oa-pop');
    await s.addItems(items.slice(0, 4));
    assert.deepEqual(await s.popItem(), items[3]);
    assert.deepEqual(await s.getItems(), items.slice(0, 3));
    assert.deepEqual(await session('oa-pop').getItems(), items.slice(0, 3), 'a new session sees the pop');
    const { messages } = await client.allMessages(ns, 'oa-pop');
    assert.equal(messages.length, 3, 'the history holds the items left');
    await s.addItems([items[5]]);
    assert.deepEqual(await s.getItems(), [...items.slice(0, 3), items[5]]);
    await s.clearSession();
    assert.deepEqual(await s.getItems(), []);
    assert.equal((await client.allMessages(ns, 'oa-pop')).messages.length, 0);
    assert.equal(await s.popItem(), undefined);
  });

  it('reads messages other writers appended as the Responses items that say the same', async () => {
    await client.append(ns, 'oa-foreign', [
      { id: newId(), role: 'user', blocks: [{ type: 'text', text: 'hi' }] },
      { id: newId(), role: 'assistant', blocks: [{ type: 'text', text: 'calling' }, { type: 'tool_use', toolUseId: 't1', toolName: 'lookup', input: { q: 1 } }] },
      { id: newId(), role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 't1', text: 'one' }] },
    ]);
    assert.deepEqual(await session('oa-foreign').getItems(), [
      { role: 'user', content: 'hi' },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'calling' }] },
      { type: 'function_call', callId: 't1', name: 'lookup', arguments: '{"q":1}', status: 'completed' },
      { type: 'function_call_result', callId: 't1', name: 'lookup', status: 'completed', output: 'one' },
    ]);
  });

  it('runs an agent whose second run, with a new session, sends every earlier item to the model', async () => {
    const requests = [];
    const script = [
      [{ type: 'function_call', callId: 'call_w', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' }],
      [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'FIRST_ANSWER: 18 °C' }] }],
      [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'SECOND_ANSWER' }] }],
    ];
    const model = {
      async getResponse(request) {
        requests.push(structuredClone(request.input));
        return { usage: new Usage(), output: script[requests.length - 1], responseId: `resp_${requests.length}` };
      },
      getStreamedResponse() {
        throw new Error('not streamed');
      },
    };
    const weather = tool({ name: 'weather', description: 'the weather', parameters: z.object({ city: z.string() }), execute: async ({ city }) => `18 °C in ${city}` });
    const agent = new Agent({ name: 'parley', instructions: 'answer', model, tools: [weather] });

    const first = await run(agent, 'weather in Paris?', { session: session('oa-run') });
    assert.equal(first.finalOutput, 'FIRST_ANSWER: 18 °C');
    // A new process: a new session over the same Conversation.
    const second = await run(agent, 'and tomorrow?', { session: session('oa-run') });
    assert.equal(second.finalOutput, 'SECOND_ANSWER');

    const sent = requests[2].map((i) => i.type === 'function_call' ? `call:${i.name}` : i.type === 'function_call_result' ? `result:${i.output.text ?? i.output}` : `${i.role}:${typeof i.content === 'string' ? i.content : i.content.map((c) => c.text).join('')}`);
    assert.deepEqual(sent, ['user:weather in Paris?', 'call:weather', 'result:18 °C in Paris', 'assistant:FIRST_ANSWER: 18 °C', 'user:and tomorrow?']);
  });
});
