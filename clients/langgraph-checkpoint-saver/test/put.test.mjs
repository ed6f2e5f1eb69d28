// A put that a crash interrupts, against a live Session API: the history never holds a
// checkpoint's messages without the checkpoint, and a put retried after its answer was lost
// stores nothing twice. Run by the Go envtest suite (test/clients/agent_frameworks_test.go),
// which sets PARLEY_API_URL, PARLEY_NAMESPACE, PARLEY_CHECK_TOKEN and creates the
// conversations lg-crash and lg-retry.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';

import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { ParleyClient } from '@parley-dev/session-api';

import { ParleyCheckpointSaver } from '../dist/index.js';

const env = process.env;
const options = { url: env.PARLEY_API_URL, token: env.PARLEY_CHECK_TOKEN };
const client = new ParleyClient(options);
after(() => client.close());

// CrashingClient is the client of a process that dies: once its write requests reached the
// server `budget` times, every later write fails before it is sent; with loseCheckpointAnswer,
// the write that stores a checkpoint reaches the server and its answer is lost.
class CrashingClient extends ParleyClient {
  budget = Infinity;
  loseCheckpointAnswer = false;

  append(...args) {
    return this.write(() => super.append(...args));
  }

  importState(namespace, name, req) {
    const checkpoint = (req.state.records ?? []).some((r) => r.raw.type === 'langgraph.checkpoint');
    return this.write(() => super.importState(namespace, name, req), checkpoint);
  }

  async write(send, checkpoint = false) {
    if (this.budget <= 0) throw new Error('crashed before the request');
    this.budget--;
    const answer = await send();
    if (checkpoint && this.loseCheckpointAnswer) throw new Error('crashed before the answer');
    return answer;
  }
}

const saver = (c = client) => new ParleyCheckpointSaver({ client: c, namespace: env.PARLEY_NAMESPACE });

// checkpointOf is a root checkpoint whose messages channel holds messages, at a new version.
function checkpointOf(messages, version) {
  const cp = emptyCheckpoint();
  cp.id = uuid6(-3);
  cp.channel_values = { messages };
  cp.channel_versions = { messages: version };
  return cp;
}

async function put(s, threadId, parent, messages, version) {
  const configurable = { thread_id: threadId, checkpoint_ns: '', ...(parent ? { checkpoint_id: parent } : {}) };
  const out = await s.put({ configurable }, checkpointOf(messages, version), { source: 'loop', step: version, parents: {} }, { messages: version });
  return out.configurable.checkpoint_id;
}

const human = new HumanMessage({ id: 'human-1', content: 'weather in Paris?' });
const answer = new AIMessage({ id: 'ai-1', content: '18 °C' });

describe('ParleyCheckpointSaver.put', () => {
  it('leaves no message without its checkpoint when the process dies during a put', async () => {
    const crashing = new CrashingClient(options);
    after(() => crashing.close());
    const first = await put(saver(crashing), 'lg-crash', undefined, [human], 1);
    // The process dies after one more write request reached the server.
    crashing.budget = 1;
    await put(saver(crashing), 'lg-crash', first, [human, answer], 2).catch(() => {});

    // A new process: every message of the history is in the latest checkpoint it finds.
    const latest = await saver().getTuple({ configurable: { thread_id: 'lg-crash' } });
    const held = new Set(latest.checkpoint.channel_values.messages.map((m) => m.id));
    const { messages } = await client.allMessages(env.PARLEY_NAMESPACE, 'lg-crash');
    assert.deepEqual(
      messages.map((m) => m.id).filter((id) => !held.has(id)),
      [],
      `messages without their checkpoint (the latest holds ${[...held]})`,
    );
  });

  it('stores nothing twice when a put is retried after its answer was lost', async () => {
    const first = await put(saver(), 'lg-retry', undefined, [human], 1);
    const before = await client.state(env.PARLEY_NAMESPACE, 'lg-retry');

    const crashing = new CrashingClient(options);
    after(() => crashing.close());
    crashing.loseCheckpointAnswer = true;
    const cp = checkpointOf([human, answer], 2);
    const configurable = { thread_id: 'lg-retry', checkpoint_ns: '', checkpoint_id: first };
    const metadata = { source: 'loop', step: 2, parents: {} };
    await assert.rejects(saver(crashing).put({ configurable }, cp, metadata, { messages: 2 }));
    // The retry, by a new process, of the same put.
    await saver().put({ configurable }, cp, metadata, { messages: 2 });

    const after_ = await client.state(env.PARLEY_NAMESPACE, 'lg-retry');
    assert.deepEqual(
      after_.state.messages.map((m) => m.id),
      ['human-1', 'ai-1'],
    );
    const records = (st) => (st.state.records ?? []).map((r) => r.raw.type);
    assert.deepEqual(records(after_).slice(records(before).length), ['langgraph.blob', 'langgraph.checkpoint'], 'the retried put stored its records once');
  });
});
