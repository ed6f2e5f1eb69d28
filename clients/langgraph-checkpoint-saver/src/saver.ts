import { createHash } from 'node:crypto';

import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  compareWritesSortKeys,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import { newId, ParleyClient, ParleyProblem, type Message, type State } from '@parley-dev/session-api';

import { MESSAGES_CHANNEL, newMessages } from './messages.js';
import { blobKey, ThreadIndex, writesKey, type CheckpointRecord, type SaverRecord, type Serialized } from './records.js';

export interface ParleyCheckpointSaverOptions {
  /** The Session API client. Default: ParleyClient.fromEnvironment() (the agent pod's). */
  client?: ParleyClient;
  /** The namespace of the threads' Conversations. Default: PARLEY_NAMESPACE. */
  namespace?: string;
  /**
   * The Conversation that holds a thread. Default: the Conversation named like the thread id
   * (in an agent pod, run the graph with thread_id = PARLEY_CONVERSATION).
   */
  conversationFor?: (threadId: string) => string | Promise<string>;
  /** The serializer of checkpoints and writes. Default: LangGraph's JsonPlusSerializer. */
  serde?: SerializerProtocol;
}

// The Session API takes at most 500 messages per append.
const MAX_BATCH = 500;

/**
 * A LangGraph checkpoint saver whose threads are Parley Conversations (docs/agents.md): a
 * thread's checkpoints, channel values and pending writes are records of its Conversation's
 * history (see records.ts), and the graph's messages are the Conversation's messages.
 *
 * Each saver reads a thread's records once and keeps them indexed; before answering from the
 * index it asks the Conversation's head (one small request) and reads the records again only
 * when another writer moved it. `list` without a thread id lists the threads this saver used.
 * `deleteThread` is a Session API reset (the history before it is kept in a Reset Checkpoint),
 * which needs `delete` on conversations/history.
 */
export class ParleyCheckpointSaver extends BaseCheckpointSaver {
  private readonly client: ParleyClient;
  private readonly namespace: string;
  private readonly conversationFor: (threadId: string) => string | Promise<string>;
  private readonly threads = new Map<string, ThreadIndex>();
  private readonly used = new Set<string>();

  constructor(options: ParleyCheckpointSaverOptions = {}) {
    super(options.serde);
    this.client = options.client ?? ParleyClient.fromEnvironment();
    const namespace = options.namespace ?? process.env.PARLEY_NAMESPACE;
    if (!namespace) {
      throw new Error('ParleyCheckpointSaver: the namespace is needed (option namespace or PARLEY_NAMESPACE)');
    }
    this.namespace = namespace;
    this.conversationFor = options.conversationFor ?? ((threadId) => threadId);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) return undefined;
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const index = await this.index(threadId);
    const byId = index?.checkpoints.get(ns);
    if (!index || !byId) return undefined;
    const id = getCheckpointId(config) || latest(byId.keys());
    const rec = id ? byId.get(id) : undefined;
    return rec ? this.tupleOf(threadId, index, rec) : undefined;
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let { limit } = options;
    const threadId = config.configurable?.thread_id as string | undefined;
    const wantNs = config.configurable?.checkpoint_ns as string | undefined;
    const wantId = config.configurable?.checkpoint_id as string | undefined;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    for (const thread of threadId !== undefined ? [threadId] : [...this.used]) {
      const index = await this.index(thread);
      if (!index) continue;
      for (const [ns, byId] of index.checkpoints) {
        if (wantNs !== undefined && ns !== wantNs) continue;
        for (const id of [...byId.keys()].sort().reverse()) {
          if ((wantId && id !== wantId) || (beforeId && id >= beforeId)) continue;
          const rec = byId.get(id)!;
          if (filter) {
            const metadata = (await this.loads(rec.metadata)) as Record<string, unknown>;
            if (!Object.entries(filter).every(([k, v]) => metadata[k] === v)) continue;
          }
          if (limit !== undefined) {
            if (limit <= 0) return;
            limit--;
          }
          yield await this.tupleOf(thread, index, rec);
        }
      }
    }
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId = requireThread(config, 'put checkpoint');
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const parent = config.configurable?.checkpoint_id as string | undefined;
    const stored = copyCheckpoint(checkpoint);
    const values = stored.channel_values;
    stored.channel_values = {};
    const records: SaverRecord[] = [];
    for (const [channel, version] of Object.entries(newVersions)) {
      const value = channel in values ? await this.dumps(values[channel]) : undefined;
      records.push({ type: 'langgraph.blob', ns, channel, version, ...(value ? { value } : {}) });
    }
    records.push({
      type: 'langgraph.checkpoint',
      ns,
      id: checkpoint.id,
      ...(parent ? { parent } : {}),
      checkpoint: await this.dumps(stored),
      metadata: await this.dumps(metadata),
    });
    const index = await this.index(threadId);
    const messages = ns === '' && index ? newMessages(checkpoint.channel_values[MESSAGES_CHANNEL], index.messageIds) : [];
    await this.appendRecords(threadId, importIdOf(records), records, messages);
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = requireThread(config, 'put writes');
    const checkpointId = config.configurable?.checkpoint_id as string | undefined;
    if (checkpointId === undefined) {
      throw new Error('ParleyCheckpointSaver: cannot put writes: the config has no configurable.checkpoint_id');
    }
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const stored = await Promise.all(
      writes.map(async ([channel, value], i) => ({ idx: WRITES_IDX_MAP[channel] || i, channel, value: await this.dumps(value) })),
    );
    // A fresh import id: the same writes put again after other writes of the task count again
    // (the latest error or interrupt wins); a retried request repeats the id.
    await this.appendRecords(threadId, newId(), [{ type: 'langgraph.writes', ns, checkpoint: checkpointId, task: taskId, ...(taskPath ? { path: taskPath } : {}), writes: stored }]);
  }

  /** Clears the thread's Conversation (a reset: a Reset Checkpoint keeps what it held). */
  async deleteThread(threadId: string): Promise<void> {
    const conversation = await this.conversationFor(threadId);
    this.threads.delete(threadId);
    try {
      await this.client.reset(this.namespace, conversation, { keepSystem: true });
    } catch (err) {
      if (!(err instanceof ParleyProblem && err.status === 404)) throw err;
    }
  }

  // index is the thread's records, read again when the Conversation's head moved since; none
  // when the Conversation does not exist.
  private async index(threadId: string): Promise<ThreadIndex | undefined> {
    this.used.add(threadId);
    const conversation = await this.conversationFor(threadId);
    const cached = this.threads.get(threadId);
    try {
      if (cached) {
        const head = await this.client.conversation(this.namespace, conversation);
        if (head.epoch === cached.epoch && head.sequence === cached.sequence) return cached;
      }
      const st = await this.client.state(this.namespace, conversation);
      const index = new ThreadIndex(st.epoch, st.sequence);
      for (const r of st.state.records ?? []) index.add(r.raw);
      for (const m of st.state.messages ?? []) index.messageIds.add(m.id);
      this.threads.set(threadId, index);
      return index;
    } catch (err) {
      if (err instanceof ParleyProblem && err.status === 404) {
        this.threads.delete(threadId);
        return undefined;
      }
      throw err;
    }
  }

  // appendRecords stores records, and the new messages of the checkpoint among them, in one
  // import request named id: the history never holds a checkpoint's messages without the
  // checkpoint, so a graph resumed after a crash finds no message that no checkpoint led to.
  // put names the import by a digest of its records, so a put retried after a lost answer, by
  // this process or a new one, stores nothing twice (messages are stored once by their ids).
  //
  // More new messages than one request takes (the graph's first put of a long thread) go in
  // later parts of the same import: a crash between parts leaves the checkpoint with some of
  // its messages missing from the history, which the next put sends again, since it sends
  // every message of the channel that the history does not hold.
  private async appendRecords(threadId: string, id: string, records: SaverRecord[], messages: Message[] = []): Promise<void> {
    const conversation = await this.conversationFor(threadId);
    for (let part = 0, i = 0; part === 0 || i < messages.length; part++, i += MAX_BATCH) {
      const batch = messages.slice(i, i + MAX_BATCH);
      const last = batch.at(-1)?.id;
      const state: State = {
        schemaVersion: '',
        // A part's messages are numbered among themselves; the history numbers them anew.
        messages: batch.map((m, n) => ({ ...m, seq: n + 1 })),
        records: part === 0 ? records.map((raw) => ({ raw, ...(last ? { afterId: last } : {}) })) : [],
      };
      const res = await this.client.importState(this.namespace, conversation, { id, part, state });
      this.advance(threadId, res.sequences, (index) => {
        batch.forEach((m) => index.messageIds.add(m.id));
        if (part === 0) records.forEach((r) => index.add(r));
      });
    }
  }

  // advance applies an own write to the index when it directly follows what the index holds;
  // otherwise someone else wrote in between and the index is read again on the next call.
  private advance(threadId: string, sequences: number[], apply: (index: ThreadIndex) => void): void {
    const index = this.threads.get(threadId);
    if (!index || sequences.length === 0) return;
    if (sequences[0] !== index.sequence + 1) {
      this.threads.delete(threadId);
      return;
    }
    apply(index);
    index.sequence = sequences[sequences.length - 1];
  }

  private async tupleOf(threadId: string, index: ThreadIndex, rec: CheckpointRecord): Promise<CheckpointTuple> {
    const checkpoint = (await this.loads(rec.checkpoint)) as Checkpoint;
    const values: Record<string, unknown> = {};
    for (const [channel, version] of Object.entries(checkpoint.channel_versions ?? {})) {
      const blob = index.blobs.get(blobKey(rec.ns, channel, version));
      if (blob) values[channel] = await this.loads(blob);
    }
    checkpoint.channel_values = values;
    if (checkpoint.v < 4 && rec.parent !== undefined) {
      await this.migratePendingSends(checkpoint, index, rec.ns, rec.parent);
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: rec.ns, checkpoint_id: rec.id } },
      checkpoint,
      metadata: (await this.loads(rec.metadata)) as CheckpointMetadata,
      pendingWrites: await this.pendingWrites(index, rec.ns, rec.id),
    };
    if (rec.parent !== undefined) {
      tuple.parentConfig = { configurable: { thread_id: threadId, checkpoint_ns: rec.ns, checkpoint_id: rec.parent } };
    }
    return tuple;
  }

  // pendingWrites are a checkpoint's writes in the order live execution applies them.
  private async pendingWrites(index: ThreadIndex, ns: string, checkpointId: string): Promise<CheckpointPendingWrite[]> {
    const stored = [...(index.writes.get(writesKey(ns, checkpointId))?.values() ?? [])];
    stored.sort((a, b) => compareWritesSortKeys(writesSortKey(a.path, a.task, a.idx), writesSortKey(b.path, b.task, b.idx)));
    return Promise.all(stored.map(async (w): Promise<CheckpointPendingWrite> => [w.task, w.channel, await this.loads(w.value)]));
  }

  // migratePendingSends gives a checkpoint of a format before version 4 the sends its parent's
  // writes held, as LangGraph's own savers do.
  private async migratePendingSends(checkpoint: Checkpoint, index: ThreadIndex, ns: string, parent: string): Promise<void> {
    const sends = (await this.pendingWrites(index, ns, parent)).filter(([, channel]) => channel === TASKS).map(([, , value]) => value);
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }

  private async dumps(value: unknown): Promise<Serialized> {
    const [t, bytes] = await this.serde.dumpsTyped(value);
    if (t === 'json') {
      try {
        return { t, json: JSON.parse(Buffer.from(bytes).toString('utf8')) };
      } catch {
        // not JSON after all: kept as bytes
      }
    }
    return { t, b64: Buffer.from(bytes).toString('base64') };
  }

  private async loads(s: Serialized): Promise<unknown> {
    const bytes = 'json' in s ? new TextEncoder().encode(JSON.stringify(s.json)) : Buffer.from(s.b64 ?? '', 'base64');
    return this.serde.loadsTyped(s.t, bytes);
  }
}

// importIdOf names the import of records by their content: the same put names it the same.
function importIdOf(records: SaverRecord[]): string {
  return `langgraph-${createHash('sha256').update(JSON.stringify(records)).digest('hex').slice(0, 40)}`;
}

function requireThread(config: RunnableConfig, what: string): string {
  const threadId = config.configurable?.thread_id as string | undefined;
  if (threadId === undefined) {
    throw new Error(`ParleyCheckpointSaver: cannot ${what}: the config has no configurable.thread_id (run the graph with { configurable: { thread_id } })`);
  }
  return threadId;
}

// latest is the greatest checkpoint id: LangGraph's ids (uuid6) sort by time.
function latest(ids: Iterable<string>): string | undefined {
  let out: string | undefined;
  for (const id of ids) if (out === undefined || id > out) out = id;
  return out;
}
