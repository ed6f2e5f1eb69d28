// Checks ParleySessionStore (../dist) with the real Claude Agent SDK against a live Session
// API. Run by the Go envtest suite of the clients (test/clients/session_store_test.go), which
// sets:
//   PARLEY_API_URL, PARLEY_NAMESPACE, PARLEY_CONVERSATION, PARLEY_SESSION_ID, PARLEY_TOKEN_FILE
//       the resume conversation, as an agent pod sees it (the store is built with no options);
//   PARLEY_CHECK_CONTRACT, PARLEY_CHECK_IMPORT, PARLEY_CHECK_TOKEN
//       two more conversations of the namespace and a token that may use them;
//   PARLEY_CHECK_MAIN_TRANSCRIPT, PARLEY_CHECK_SUBAGENT_TRANSCRIPT (a real Claude Code session's
//       transcript and its subagent a9b844f's), PARLEY_CHECK_DIR (a scratch folder).
// It prints "ok <check>" per check and exits non-zero at the first failure.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { importSessionToStore, InMemorySessionStore, query } from '@anthropic-ai/claude-agent-sdk';

import { ParleyProblem, ParleySessionStore } from '../dist/index.js';
import { items, startMessagesStub } from './messages-stub.mjs';

const env = process.env;
const scratch = env.PARLEY_CHECK_DIR;
const mainTranscript = env.PARLEY_CHECK_MAIN_TRANSCRIPT;
const subagentTranscript = env.PARLEY_CHECK_SUBAGENT_TRANSCRIPT;
const timings = {};

async function check(name, fn) {
  const start = Date.now();
  await fn();
  timings[name] = Date.now() - start;
  console.log(`ok ${name} (${timings[name]} ms)`);
}

function dir(...parts) {
  const p = path.join(scratch, ...parts);
  fs.mkdirSync(p, { recursive: true });
  return p;
}

// sameEntries is assert.deepEqual with a failure message that lists both sides by type and uuid.
function sameEntries(got, want, what) {
  try {
    assert.deepEqual(got, want);
  } catch {
    const list = (es) => (es ?? []).map((e, i) => `${i} ${e.type} ${e.uuid ?? '-'}`).join('\n');
    assert.fail(`${what} differ:\n--- got\n${list(got)}\n--- want\n${list(want)}`);
  }
}

function jsonl(file) {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

// ---------------------------------------------------------------------------------------
// The SessionStore contract (sdk.d.ts), on a fresh conversation, beside the SDK's own
// InMemorySessionStore as the reference where the contract leaves nothing open.

// A small maxBodyBytes makes the store split appends by size as well as by count.
const store = new ParleySessionStore({ conversation: env.PARLEY_CHECK_CONTRACT, token: env.PARLEY_CHECK_TOKEN, maxBodyBytes: 256 << 10 });
const reference = new InMemorySessionStore();
const projectKey = '-workspace';
const sessionId = (await (await fetch(`${env.PARLEY_API_URL}/v1/namespaces/${env.PARLEY_NAMESPACE}/conversations/${env.PARLEY_CHECK_CONTRACT}`, {
  headers: { authorization: `Bearer ${env.PARLEY_CHECK_TOKEN}` },
})).json()).sessionId;
const main = { projectKey, sessionId };
const sub = { projectKey, sessionId, subpath: 'subagents/agent-a1' };
const nested = { projectKey, sessionId, subpath: 'subagents/workflows/w1/agent-b2' };

// Entries of every JSON shape a transcript line may hold.
const odd = [
  { type: 'user', uuid: 'c-u1', parentUuid: null, sessionId, message: { role: 'user', content: 'hello ✓ 日本 🚀' } },
  {
    type: 'assistant', uuid: 'c-a1', parentUuid: 'c-u1', sessionId,
    message: { id: 'msg_c1', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'half an emoji: \ud83d, a line separator: \u2028, quotes: "\\' }] },
  },
  { type: 'future-kind', uuid: 'c-f1', nested: { deep: [[[{ a: [] }]], {}], n: 1.5, big: 1e21, small: 5e-324, neg: -7, t: true, f: false, nil: null }, z: 'last', a: 'first' },
  { type: 'custom-title', customTitle: 'no uuid here' },
  { type: 'tool-output', uuid: 'c-big', text: 'x'.repeat(300_000) },
];

await check('load of a key never written is null; nothing is listed', async () => {
  assert.equal(await store.load(main), null);
  assert.equal(await store.load(sub), null);
  assert.deepEqual(await store.listSessions(projectKey), []);
  assert.deepEqual(await store.listSubkeys(main), []);
});

await check('append then load returns the entries deep-equal, in append-call order, as the SDK reference does', async () => {
  for (const s of [store, reference]) {
    await s.append(main, odd.slice(0, 2));
    await s.append(main, odd.slice(2));
    await s.append(sub, [{ type: 'user', uuid: 's-u1', message: { role: 'user', content: 'sub' } }]);
    await s.append(nested, [{ type: 'agent_metadata', toolUseId: 'toolu_x', parentAgentId: null }]);
  }
  assert.deepEqual(await store.load(main), odd);
  for (const key of [main, sub, nested]) {
    assert.deepEqual(await store.load(key), await reference.load(key), `key ${JSON.stringify(key)}`);
  }
});

await check('subpaths are separate keys, listed by listSubkeys', async () => {
  assert.deepEqual((await store.listSubkeys(main)).sort(), [sub.subpath, nested.subpath].sort());
  assert.deepEqual((await store.listSubkeys(main)).sort(), (await reference.listSubkeys(main)).sort());
  assert.equal((await store.load(main)).some((e) => e.uuid === 's-u1'), false);
});

await check('uuid is the idempotency key: a replayed or changed entry is stored once, the first kept', async () => {
  const before = await store.load(main);
  await store.append(main, odd.slice(0, 3));
  await store.append(main, [{ ...odd[0], message: { role: 'user', content: 'changed' } }]);
  assert.deepEqual(await store.load(main), before);
});

await check('entries without a uuid are appended without dedup', async () => {
  const before = await store.load(main);
  const tag = { type: 'tag', tag: 'again' };
  await store.append(main, [tag]);
  await store.append(main, [tag]);
  assert.deepEqual(await store.load(main), [...before, tag, tag]);
});

await check('an append larger than one request or one page comes back whole and in order', async () => {
  const many = Array.from({ length: 1234 }, (_, i) => ({ type: 'progress', uuid: `c-p${i}`, i, pad: 'p'.repeat(500) }));
  const before = await store.load(main);
  await store.append(main, many);
  assert.deepEqual(await store.load(main), [...before, ...many]);
});

await check('listSessions gives the session with an integer mtime that moves with appends', async () => {
  const [first] = await store.listSessions(projectKey);
  assert.equal(first.sessionId, sessionId);
  assert.ok(Number.isInteger(first.mtime) && Math.abs(first.mtime - Date.now()) < 120_000, `mtime ${first.mtime}`);
  await new Promise((r) => setTimeout(r, 5));
  await store.append(main, [{ type: 'last-prompt', lastPrompt: 'x' }]);
  const [second] = await store.listSessions(projectKey);
  assert.ok(second.mtime > first.mtime, `mtime ${first.mtime} then ${second.mtime}`);
});

await check('another session is refused on append and absent on load', async () => {
  const other = { projectKey, sessionId: '00000000-0000-4000-8000-000000000000' };
  await assert.rejects(store.append(other, [{ type: 'user', uuid: 'o1' }]), /holds session/);
  assert.equal(await store.load(other), null);
  assert.deepEqual(await store.listSubkeys(other), []);
});

await check('a bad entry or subpath is refused (422 / 400) and changes nothing', async () => {
  const before = await store.load(main);
  await assert.rejects(store.append(main, [{ type: 'user', uuid: 'ok-1' }, { uuid: 'no-type' }]), (e) => e instanceof ParleyProblem && e.status === 422);
  await assert.rejects(store.append({ ...main, subpath: '../escape' }, [{ type: 'user' }]), (e) => e instanceof ParleyProblem && e.status === 422);
  await assert.rejects(store.load({ ...main, subpath: '../escape' }), (e) => e instanceof ParleyProblem && e.status === 400);
  assert.deepEqual(await store.load(main), before);
});

// ---------------------------------------------------------------------------------------
// importSessionToStore of a real Claude Code transcript (the fixture, with its subagent).

const fixtureMain = jsonl(mainTranscript);
const fixtureSub = jsonl(subagentTranscript);
const fixtureSession = fixtureMain.find((l) => l.sessionId).sessionId;
const imported = new ParleySessionStore({ conversation: env.PARLEY_CHECK_IMPORT, token: env.PARLEY_CHECK_TOKEN, sessionId: fixtureSession });

await check('importSessionToStore copies a real transcript and its subagent, which load returns deep-equal', async () => {
  const config = dir('import-config');
  const project = dir('import-config', 'projects', '-workspace');
  fs.copyFileSync(mainTranscript, path.join(project, `${fixtureSession}.jsonl`));
  fs.mkdirSync(path.join(project, fixtureSession, 'subagents'), { recursive: true });
  fs.copyFileSync(subagentTranscript, path.join(project, fixtureSession, 'subagents', 'agent-a9b844f.jsonl'));
  process.env.CLAUDE_CONFIG_DIR = config;
  await importSessionToStore(fixtureSession, imported, { batchSize: 5 });
  delete process.env.CLAUDE_CONFIG_DIR;
  const key = { projectKey: '-workspace', sessionId: fixtureSession };
  assert.deepEqual(await imported.load(key), fixtureMain);
  assert.deepEqual(await imported.listSubkeys(key), ['subagents/agent-a9b844f']);
  assert.deepEqual(await imported.load({ ...key, subpath: 'subagents/agent-a9b844f' }), fixtureSub);
});

await check('a replayed import stores no entry with a uuid twice', async () => {
  process.env.CLAUDE_CONFIG_DIR = path.join(scratch, 'import-config');
  await importSessionToStore(fixtureSession, imported, {});
  delete process.env.CLAUDE_CONFIG_DIR;
  const key = { projectKey: '-workspace', sessionId: fixtureSession };
  const keyless = fixtureMain.filter((l) => l.uuid === undefined);
  assert.deepEqual(await imported.load(key), [...fixtureMain, ...keyless]);
  assert.deepEqual(await imported.load({ ...key, subpath: 'subagents/agent-a9b844f' }), fixtureSub);
});

// ---------------------------------------------------------------------------------------
// A real resume: the SDK runs a turn (a tool call and a subagent) mirrored to Parley, its
// local transcript is removed, and a new query with a fresh, empty CLAUDE_CONFIG_DIR resumes
// the session from Parley alone.

const stub = await startMessagesStub((req) => {
  const last = req.messages.at(-1);
  const text = JSON.stringify(last.content);
  if (text.includes('SUBAGENT TASK')) return [{ type: 'text', text: 'SUBAGENT_DONE' }];
  if (text.includes('"tool_use_id":"toolu_read_1"')) {
    return [{ type: 'tool_use', id: 'toolu_agent_1', name: 'Agent', input: { description: 'parley subagent', prompt: 'SUBAGENT TASK: answer done', subagent_type: 'general-purpose', run_in_background: false } }];
  }
  if (text.includes('"tool_use_id":"toolu_agent_1"')) return [{ type: 'text', text: 'FIRST_ANSWER' }];
  if (text.includes('parley first turn')) {
    return [{ type: 'tool_use', id: 'toolu_read_1', name: 'Read', input: { file_path: path.join(scratch, 'work', 'marker.txt') } }];
  }
  if (text.includes('parley second turn')) return [{ type: 'text', text: 'SECOND_ANSWER' }];
  if (text.includes('parley resumes the fixture')) return [{ type: 'text', text: 'FIXTURE_ANSWER' }];
  return [{ type: 'text', text: 'noted' }];
});

function sdkEnv(configDir) {
  return {
    ...process.env,
    CLAUDE_CONFIG_DIR: configDir,
    ANTHROPIC_BASE_URL: stub.url,
    ANTHROPIC_API_KEY: 'stub',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
  };
}

// run drives one query to its end and returns its result message.
async function run(prompt, options) {
  let result;
  for await (const m of query({ prompt, options: { model: 'claude-sonnet-4-5', allowedTools: ['Read', 'Agent'], ...options } })) {
    if (m.type === 'result') result = m;
  }
  return result;
}

// spy records the calls the SDK makes on a store.
function spy(inner, calls) {
  return {
    append: (k, e) => inner.append(k, e),
    load: (k) => (calls.push(`load ${k.subpath ?? 'main'}`), inner.load(k)),
    listSubkeys: (k) => (calls.push('listSubkeys'), inner.listSubkeys(k)),
    listSessions: (p) => inner.listSessions(p),
  };
}

const session = env.PARLEY_SESSION_ID;
const agentStore = new ParleySessionStore(); // configured by PARLEY_* alone, as in an agent pod
const key = { projectKey: 'ignored', sessionId: session };

await check('a query with the Parley store mirrors its transcript and its subagent\'s, deep-equal to the CLI\'s own files', async () => {
  const config = dir('first-config');
  fs.writeFileSync(path.join(dir('work'), 'marker.txt'), 'PARLEY_TOOL_OUTPUT\n');
  const result = await run('parley first turn: read the marker, then delegate', { sessionStore: agentStore, sessionId: session, cwd: dir('work'), env: sdkEnv(config) });
  // The result is the reply to the last request, which may be the subagent's completion
  // notice: the turn's answer is checked in the transcript.
  assert.equal(result?.subtype, 'success', JSON.stringify(result));
  // The CLI writes api-request* lines (what it sent) only locally: the SDK mirrors the rest.
  const mirrored = (lines) => lines.filter((e) => !e.type.startsWith('api-request'));
  const [project] = fs.readdirSync(path.join(config, 'projects'));
  const local = mirrored(jsonl(path.join(config, 'projects', project, `${session}.jsonl`)));
  sameEntries(await agentStore.load(key), local, 'the mirrored and the local main transcript');
  assert.ok(JSON.stringify(local).includes('FIRST_ANSWER'), 'the turn did not end with the answer');
  const subkeys = await agentStore.listSubkeys(key);
  assert.equal(subkeys.length, 1, `subkeys ${subkeys}`);
  const localSub = mirrored(jsonl(path.join(config, 'projects', project, session, `${subkeys[0]}.jsonl`)));
  // The SDK also mirrors the subagent's .meta.json sidecar as an agent_metadata entry.
  const sub = (await agentStore.load({ ...key, subpath: subkeys[0] })).filter((e) => e.type !== 'agent_metadata');
  sameEntries(sub, localSub, 'the mirrored and the local subagent transcript');
  fs.rmSync(config, { recursive: true });
});

await check('control: the same resume from an empty store finds no session', async () => {
  await assert.rejects(
    run('parley second turn', { sessionStore: new InMemorySessionStore(), resume: session, cwd: dir('elsewhere'), env: sdkEnv(dir('control-config')) }),
    /No conversation found/,
  );
});

await check('resume with a fresh, empty CLAUDE_CONFIG_DIR in another directory: the request holds every earlier turn from Parley', async () => {
  const config = dir('second-config');
  assert.deepEqual(fs.readdirSync(config), []);
  const calls = [];
  const before = stub.requests.length;
  const result = await run('parley second turn', { sessionStore: spy(agentStore, calls), resume: session, cwd: dir('elsewhere'), env: sdkEnv(config) });
  assert.equal(result?.subtype, 'success', JSON.stringify(result));
  const request = stub.requests.slice(before).find((r) => JSON.stringify(r.messages.at(-1).content).includes('parley second turn'));
  assert.ok(request, 'no request carried the second prompt');
  const got = items(request);
  const want = [
    /^user:text:parley first turn/,
    /^assistant:tool_use:Read:toolu_read_1$/,
    /^user:tool_result:toolu_read_1:.*PARLEY_TOOL_OUTPUT/,
    /^assistant:tool_use:Agent:toolu_agent_1$/,
    /^user:tool_result:toolu_agent_1:.*SUBAGENT_DONE/,
    /^assistant:text:FIRST_ANSWER$/,
    /^user:text:parley second turn$/,
  ];
  let at = 0;
  for (const re of want) {
    while (at < got.length && !re.test(got[at])) at++;
    assert.ok(at < got.length, `the request lacks ${re} (in order); it holds:\n${got.map((i) => i.slice(0, 160).replaceAll('\n', ' ')).join('\n')}`);
    at++;
  }
  assert.ok(calls.includes('load main') && calls.some((c) => c.startsWith('load subagents/')), `store calls ${calls}`);
  assert.ok(JSON.stringify(await agentStore.load(key)).includes('SECOND_ANSWER'), 'the resumed turn was not mirrored');
});

await check('resume of the imported real transcript: the request holds its earlier turns', async () => {
  const before = stub.requests.length;
  const result = await run('parley resumes the fixture', { sessionStore: imported, resume: fixtureSession, cwd: dir('fixture-work'), env: sdkEnv(dir('fixture-config')) });
  assert.equal(result?.subtype, 'success', JSON.stringify(result));
  const request = stub.requests.slice(before).find((r) => JSON.stringify(r.messages.at(-1).content).includes('parley resumes the fixture'));
  assert.ok(request, 'no request carried the prompt');
  const got = items(request).join('\n');
  const toolIds = fixtureMain.flatMap((l) => (l.type === 'assistant' && Array.isArray(l.message.content) ? l.message.content.filter((b) => b.type === 'tool_use').map((b) => b.id) : []));
  assert.ok(toolIds.length >= 3, `fixture tool calls ${toolIds}`);
  let at = 0;
  for (const id of [...toolIds, 'parley resumes the fixture']) {
    const i = got.indexOf(id, at);
    assert.ok(i >= 0, `the request lacks ${id} (in order); it holds:\n${got}`);
    at = i + id.length;
  }
  assert.ok(got.includes('Do the following in order'), 'the first prompt of the fixture is missing');
});

stub.close();
console.log(JSON.stringify({ ok: true, timings }));
