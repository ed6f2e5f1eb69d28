// ParleySessionStore: a Claude Agent SDK SessionStore that keeps the agent's transcript in a
// Parley Conversation, through the Session API (docs/agents.md, docs/session-api.md).
//
//   import { query } from '@anthropic-ai/claude-agent-sdk';
//   import { ParleySessionStore } from '@parley-dev/claude-session-store';
//   query({ prompt, options: { sessionStore: new ParleySessionStore(), resume: process.env.PARLEY_SESSION_ID } });
//
// Inside an agent pod it needs no configuration: the Conversation, its session id and the API
// come from the PARLEY_* variables the operator sets. The HTTP — the token file read again on
// every call, the CA in PARLEY_CA_FILE, retries with the same batch ids, paging — is the
// TypeScript Session API client's (@parley-dev/session-api), which the other adapters share.

import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { DEFAULT_TOKEN_FILE, ParleyClient, type TranscriptEntry } from '@parley-dev/session-api';

export { DEFAULT_TOKEN_FILE, ParleyProblem } from '@parley-dev/session-api';

export interface ParleySessionStoreOptions {
  /** The Session API client. Default: one made of the options below and the PARLEY_* variables. */
  client?: ParleyClient;
  /** The Session API, e.g. https://parley-session-api.parley-system.svc:8082. Default: PARLEY_API_URL. */
  url?: string;
  /** The Conversation's namespace. Default: PARLEY_NAMESPACE. */
  namespace?: string;
  /** The Conversation's name. Default: PARLEY_CONVERSATION. */
  conversation?: string;
  /**
   * The Conversation's session id: the only session this store holds. Default:
   * PARLEY_SESSION_ID for the pod's own Conversation, else read from the API on first use.
   */
  sessionId?: string;
  /** A bearer token, or a function that returns one for each call. Default: read tokenFile. */
  token?: string | (() => string | Promise<string>);
  /** Default: PARLEY_TOKEN_FILE, else DEFAULT_TOKEN_FILE; read again on every call. */
  tokenFile?: string;
  /** The CA of the API's certificate (PEM file). Default: PARLEY_CA_FILE; else the system's CAs. */
  caFile?: string;
  /** Largest request body sent: larger appends are split. Default 3 MiB (the API takes 4 MiB). */
  maxBodyBytes?: number;
}

// The Session API takes at most 500 entries per append.
const MAX_BATCH = 500;

/**
 * A SessionStore over one Parley Conversation. The Conversation holds one session, its own
 * (`status.sessionID`, PARLEY_SESSION_ID): run the SDK with `sessionId` (first run) or
 * `resume` (later runs) set to it. Appending another session is refused, loading one finds
 * nothing. The projectKey is not part of the key: the Conversation is the scope, so a pod
 * that runs in another directory still finds its session.
 *
 * `delete` and `listSessionSummaries` are not implemented: the history is append-only and
 * goes with its Conversation (the SDK treats a missing `delete` as a no-op, and lists
 * sessions with `listSessions` and `load`).
 */
export class ParleySessionStore implements SessionStore {
  private readonly client: ParleyClient;
  private readonly namespace: string;
  private readonly conversation: string;
  private readonly maxBodyBytes: number;
  private sessionId: string | undefined;

  constructor(options: ParleySessionStoreOptions = {}) {
    const env = process.env;
    const url = options.url ?? env.PARLEY_API_URL;
    const namespace = options.namespace ?? env.PARLEY_NAMESPACE;
    const conversation = options.conversation ?? env.PARLEY_CONVERSATION;
    if ((!options.client && !url) || !namespace || !conversation) {
      throw new Error('ParleySessionStore: the Session API URL, namespace and conversation are needed (options url or client, namespace, conversation or PARLEY_API_URL, PARLEY_NAMESPACE, PARLEY_CONVERSATION)');
    }
    this.client =
      options.client ??
      new ParleyClient({
        url: url!,
        token: options.token,
        tokenFile: options.tokenFile ?? (env.PARLEY_TOKEN_FILE || DEFAULT_TOKEN_FILE),
        caFile: options.caFile ?? (env.PARLEY_CA_FILE || undefined),
      });
    this.namespace = namespace;
    this.conversation = conversation;
    // PARLEY_SESSION_ID is the session of the pod's own Conversation, not of one named here.
    const own = namespace === env.PARLEY_NAMESPACE && conversation === env.PARLEY_CONVERSATION;
    this.sessionId = options.sessionId ?? ((own && env.PARLEY_SESSION_ID) || undefined);
    this.maxBodyBytes = options.maxBodyBytes ?? 3 << 20;
  }

  /** Stores entries in order. Entries with a uuid are stored once whatever brings them again. */
  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    if (entries.length === 0) {
      return;
    }
    const own = await this.ownSession();
    if (key.sessionId !== own) {
      throw new Error(`ParleySessionStore: this Conversation holds session ${own}, not ${key.sessionId}; run the SDK with sessionId or resume ${own} (a fork is a new Conversation)`);
    }
    // Each request gets a batch id of its own, which the client repeats on every try: entries
    // without a uuid are stored once per batch and position.
    const room = this.maxBodyBytes - 200 - Buffer.byteLength(JSON.stringify(key.subpath ?? ''));
    for (const batch of chunks(entries as TranscriptEntry[], room)) {
      await this.client.appendTranscript(this.namespace, this.conversation, { subpath: key.subpath, entries: batch });
    }
  }

  /** The entries of a transcript as appended (after whatever Parley held before them), or null. */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    if (key.sessionId !== (await this.ownSession())) {
      return null;
    }
    const transcript = await this.client.transcript(this.namespace, this.conversation, key.subpath);
    return transcript.exists ? (transcript.entries as SessionStoreEntry[]) : null;
  }

  /** The Conversation's session, when it has a main transcript. */
  async listSessions(_projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const index = await this.client.transcripts(this.namespace, this.conversation);
    this.sessionId ??= index.sessionId;
    const main = index.transcripts.find((t) => !t.subpath);
    if (!main) {
      return [];
    }
    return [{ sessionId: index.sessionId, mtime: main.modified ? Math.floor(Date.parse(main.modified)) : 0 }];
  }

  /** The subagent transcripts of the session (e.g. subagents/agent-<id>). */
  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const index = await this.client.transcripts(this.namespace, this.conversation);
    this.sessionId ??= index.sessionId;
    if (key.sessionId !== index.sessionId) {
      return [];
    }
    return index.transcripts.flatMap((t) => (t.subpath ? [t.subpath] : []));
  }

  private async ownSession(): Promise<string> {
    if (this.sessionId === undefined) {
      this.sessionId = (await this.client.conversation(this.namespace, this.conversation)).sessionId;
    }
    return this.sessionId;
  }
}

// chunks groups entries into requests of at most MAX_BATCH entries and maxBytes of JSON (an
// entry larger than that goes alone, and the API says whether it takes it).
function chunks(entries: TranscriptEntry[], maxBytes: number): TranscriptEntry[][] {
  const out: TranscriptEntry[][] = [];
  let current: TranscriptEntry[] = [];
  let size = 0;
  for (const e of entries) {
    const n = Buffer.byteLength(JSON.stringify(e)) + 1;
    if (current.length > 0 && (current.length >= MAX_BATCH || size + n > maxBytes)) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(e);
    size += n;
  }
  if (current.length > 0) {
    out.push(current);
  }
  return out;
}
