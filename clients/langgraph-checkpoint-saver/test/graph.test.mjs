// Runs a real LangGraph graph with ParleyCheckpointSaver (../dist) against a live Session API:
// a turn with a tool call, then a second turn from a new saver (a new process), which must
// resume the thread from the Conversation alone. Run by the Go envtest suite
// (test/clients/agent_frameworks_test.go), which sets PARLEY_API_URL,
// PARLEY_NAMESPACE, PARLEY_CHECK_TOKEN and creates the conversation lg-graph.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';

import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ParleyClient } from '@parley-dev/session-api';

import { ParleyCheckpointSaver } from '../dist/index.js';

const env = process.env;
const client = new ParleyClient({ url: env.PARLEY_API_URL, token: env.PARLEY_CHECK_TOKEN });
after(() => client.close());
const config = { configurable: { thread_id: 'lg-graph' } };

// The scripted model records the messages each call saw.
const seen = [];
function agent(state) {
  seen.push(state.messages.map((m) => `${m.getType()}:${typeof m.content === 'string' ? m.content : ''}${m.tool_calls?.length ? `[${m.tool_calls.map((c) => c.name).join()}]` : ''}`));
  const last = state.messages.at(-1);
  if (last.getType() === 'human' && last.content === 'weather in Paris?') {
    return { messages: [new AIMessage({ id: 'ai-1', content: '', tool_calls: [{ id: 'call_1', name: 'weather', args: { city: 'Paris' } }] })] };
  }
  if (last.getType() === 'tool') {
    return { messages: [new AIMessage({ id: 'ai-2', content: 'FIRST_ANSWER: 18 °C' })] };
  }
  return { messages: [new AIMessage({ id: 'ai-3', content: 'SECOND_ANSWER' })] };
}

function tools(state) {
  const call = state.messages.at(-1).tool_calls[0];
  return { messages: [new ToolMessage({ id: 'tool-1', tool_call_id: call.id, content: `18 °C in ${call.args.city}` })] };
}

function graph(checkpointer) {
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', agent)
    .addNode('tools', tools)
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (s) => (s.messages.at(-1).tool_calls?.length ? 'tools' : END))
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

const saver = () => new ParleyCheckpointSaver({ client, namespace: env.PARLEY_NAMESPACE });

describe('a LangGraph graph on ParleyCheckpointSaver', () => {
  it('resumes the thread from the Conversation with a new saver, every earlier message in order', async () => {
    const first = await graph(saver()).invoke({ messages: [new HumanMessage({ id: 'human-1', content: 'weather in Paris?' })] }, config);
    assert.equal(first.messages.at(-1).content, 'FIRST_ANSWER: 18 °C');

    const resumed = graph(saver());
    const second = await resumed.invoke({ messages: [new HumanMessage({ id: 'human-2', content: 'and tomorrow?' })] }, config);
    assert.equal(second.messages.at(-1).content, 'SECOND_ANSWER');
    assert.deepEqual(seen.at(-1), ['human:weather in Paris?', 'ai:[weather]', 'tool:18 °C in Paris', 'ai:FIRST_ANSWER: 18 °C', 'human:and tomorrow?']);

    const state = await graph(saver()).getState(config);
    assert.equal(state.values.messages.length, 6);
    let history = 0;
    for await (const _ of saver().list(config)) history++;
    assert.ok(history >= 8, `${history} checkpoints`);
  });
});
