// Tests ParleyClient (../dist) against a live Session API. Run with `node --test` by the Go
// envtest suite (test/clients/agent_frameworks_test.go), which sets:
//   PARLEY_API_URL, PARLEY_NAMESPACE, PARLEY_CONVERSATION, PARLEY_TOKEN_FILE
//       a conversation as its agent pod sees it (a pod-bound token in a file);
//   PARLEY_CHECK_RESET, PARLEY_CHECK_TOKEN
//       another conversation and a token that may also reset it;
//   PARLEY_CHECK_TLS_URL, PARLEY_CHECK_CA_FILE
//       the same API behind TLS, and the CA that signed its certificate.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { after, describe, it } from 'node:test';

import { EpochChanged, newId, ParleyClient, ParleyProblem, Problems } from '../dist/index.js';

const env = process.env;
const ns = env.PARLEY_NAMESPACE;
const conv = env.PARLEY_CONVERSATION;
const api = ParleyClient.fromEnvironment();
after(() => api.close());

const text = (id, body, role = 'user') => ({ id, role, blocks: [{ type: 'text', text: body }] });

// proxy forwards to the API; `trouble(req, n)` may answer instead or cut the answer off.
async function proxy(trouble) {
  const upstream = new URL(env.PARLEY_API_URL);
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const seen = { method: req.method, url: req.url, body: body.toString('utf8'), n: ++n };
      const plan = trouble(seen) ?? 'forward';
      if (typeof plan === 'object') {
        res.writeHead(plan.status, plan.headers ?? {});
        res.end(plan.body ?? '');
        return;
      }
      const up = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        if (plan === 'cut') {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      });
      up.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

describe('ParleyClient', () => {
  it('reads the conversation with the token file, read again on every request', async () => {
    const head = await api.conversation(ns, conv);
    assert.equal(head.namespace, ns);
    assert.equal(head.name, conv);
    assert.match(head.sessionId, /^[0-9a-f-]{36}$/);
    const token = fs.readFileSync(env.PARLEY_TOKEN_FILE, 'utf8');
    fs.writeFileSync(env.PARLEY_TOKEN_FILE, 'not-a-token');
    try {
      await assert.rejects(api.conversation(ns, conv), (err) => err instanceof ParleyProblem && err.status === 401 && err.type === Problems.unauthorized);
    } finally {
      fs.writeFileSync(env.PARLEY_TOKEN_FILE, token);
    }
    assert.equal((await api.conversation(ns, conv)).sessionId, head.sessionId);
  });

  it('appends idempotently by id and refuses an id stored with other content', async () => {
    const batch = [text(newId(), 'first'), text(newId(), 'second answer', 'assistant')];
    const first = await api.append(ns, conv, batch);
    const again = await api.append(ns, conv, batch);
    assert.deepEqual(again, first);
    await assert.rejects(api.append(ns, conv, [text(batch[0].id, 'changed')]), (err) => err.status === 409 && err.type === Problems.conflict);
    const { messages } = await api.allMessages(ns, conv);
    assert.equal(messages.filter((m) => m.id === batch[0].id).length, 1);
  });

  it('pages by sequence and reads every page', async () => {
    const ids = Array.from({ length: 25 }, () => newId());
    await api.append(ns, conv, ids.map((id, i) => text(id, `paged ${i}`)));
    const seen = [];
    let next = 0;
    let pages = 0;
    do {
      const page = await api.messages(ns, conv, next, 10);
      assert.ok(page.messages.length <= 10);
      seen.push(...page.messages);
      next = page.next ?? 0;
      pages++;
    } while (next);
    assert.ok(pages >= 3, `${pages} pages`);
    const all = await api.allMessages(ns, conv);
    assert.deepEqual(all.messages.map((m) => m.id), seen.map((m) => m.id));
    assert.deepEqual(seen.slice(-25).map((m) => m.id), ids);
    const seqs = seen.map((m) => m.seq);
    assert.deepEqual([...seqs].sort((a, b) => a - b), seqs);
  });

  it('retries a request whose answer was lost with the same ids: stored once', async () => {
    const p = await proxy((r) => (r.method === 'POST' && r.n === 1 ? 'cut' : undefined));
    const flaky = new ParleyClient({ url: p.url, tokenFile: env.PARLEY_TOKEN_FILE });
    try {
      const m = text(newId(), 'sent once, answered twice');
      const res = await flaky.append(ns, conv, [m]);
      assert.equal(res.sequences.length, 1);
      const { messages } = await api.allMessages(ns, conv);
      assert.equal(messages.filter((x) => x.id === m.id).length, 1);
    } finally {
      flaky.close();
      p.close();
    }
  });

  it('honours Retry-After and gives up on a final answer', async () => {
    const p = await proxy((r) => (r.n === 1 ? { status: 429, headers: { 'retry-after': '2', 'content-type': 'application/problem+json' }, body: JSON.stringify({ type: Problems.overloaded, title: 'Too Many Requests', status: 429 }) } : undefined));
    const busy = new ParleyClient({ url: p.url, tokenFile: env.PARLEY_TOKEN_FILE });
    const waits = [];
    busy.sleep = async (ms) => void waits.push(ms);
    try {
      await busy.conversation(ns, conv);
      assert.deepEqual(waits, [2000]);
      // The pod-bound token may read no other conversation: a final answer.
      await assert.rejects(busy.conversation(ns, 'another-conversation'), (err) => err.status === 403 && err.type === Problems.forbidden);
      assert.deepEqual(waits, [2000], 'a 403 is not retried');
    } finally {
      busy.close();
      p.close();
    }
  });

  it('follows appended messages in order and ends when the epoch changes', async () => {
    const admin = new ParleyClient({ url: env.PARLEY_API_URL, token: env.PARLEY_CHECK_TOKEN });
    const other = env.PARLEY_CHECK_RESET;
    const abort = new AbortController();
    try {
      const start = await admin.conversation(ns, other);
      const stream = admin.follow(ns, other, { after: start.sequence, signal: abort.signal });
      const ids = [newId(), newId(), newId()];
      const got = [];
      const reading = (async () => {
        for await (const { sequence, message } of stream) {
          got.push({ sequence, id: message.id });
          if (got.length === ids.length) break;
        }
      })();
      for (const id of ids) await admin.append(ns, other, [text(id, `followed ${id}`)]);
      await reading;
      assert.deepEqual(got.map((g) => g.id), ids);
      assert.ok(got[0].sequence < got[1].sequence && got[1].sequence < got[2].sequence);

      const ended = (async () => {
        for await (const _ of admin.follow(ns, other, { after: got[2].sequence, signal: abort.signal })) {
          // the reset below ends the stream
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const reset = await admin.reset(ns, other, { keepSystem: true });
      assert.ok(reset.checkpoint);
      await assert.rejects(ended, EpochChanged);
      assert.equal((await admin.allMessages(ns, other)).messages.length, 0);
    } finally {
      abort.abort();
      admin.close();
    }
  });

  it('appends transcript lines with a batch id its retries repeat, and reads the transcript page by page', async () => {
    const p = await proxy((r) => (r.method === 'POST' && r.n === 1 ? 'cut' : undefined));
    const flaky = new ParleyClient({ url: p.url, tokenFile: env.PARLEY_TOKEN_FILE });
    try {
      const before = await api.transcript(ns, conv);
      // Lines without a uuid are stored once per batch and position: the retry of the first
      // request, whose answer was cut off, must repeat its batch id.
      const lines = Array.from({ length: 1200 }, (_, i) => ({ type: 'progress', i }));
      for (let i = 0; i < lines.length; i += 400) {
        await flaky.appendTranscript(ns, conv, { entries: lines.slice(i, i + 400) });
      }
      const first = await api.transcriptPage(ns, conv);
      assert.ok(first.next, 'the transcript fits one page');
      const all = await api.transcript(ns, conv);
      assert.equal(all.exists, true);
      assert.deepEqual(all.entries.slice(before.entries.length), lines);
      const index = await api.transcripts(ns, conv);
      assert.equal(index.sessionId, (await api.conversation(ns, conv)).sessionId);
      assert.equal(index.transcripts[0].subpath, undefined);
      assert.equal((await api.transcript(ns, conv, 'subagents/agent-none')).exists, false);
    } finally {
      flaky.close();
      p.close();
    }
  });

  it('trusts the API behind TLS with the CA file, and refuses it without', async () => {
    const secure = new ParleyClient({ url: env.PARLEY_CHECK_TLS_URL, tokenFile: env.PARLEY_TOKEN_FILE, caFile: env.PARLEY_CHECK_CA_FILE });
    const untrusting = new ParleyClient({ url: env.PARLEY_CHECK_TLS_URL, tokenFile: env.PARLEY_TOKEN_FILE });
    const waits = [];
    untrusting.sleep = async (ms) => void waits.push(ms);
    try {
      assert.equal((await secure.conversation(ns, conv)).name, conv);
      await assert.rejects(untrusting.conversation(ns, conv), (err) => /CERT|SIGNED|VERIFY/.test(err.code ?? ''));
      assert.deepEqual(waits, [], 'an untrusted certificate is not retried');
    } finally {
      secure.close();
      untrusting.close();
    }
  });
});
