import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

import { followMessages, type FollowOptions } from './follow.js';
import { transient, Transport } from './transport.js';
import type {
  AdapterStateRequest,
  AppendResponse,
  CheckpointRequest,
  Conversation,
  Event,
  ImportRequest,
  Message,
  MessagesPage,
  ResetRequest,
  ResetResponse,
  ResumeBundle,
  SequencesResponse,
  StateResponse,
  TranscriptAppendRequest,
  TranscriptIndex,
  TranscriptPage,
} from './types.js';

/** Where the operator mounts an agent's projected ServiceAccount token (audience parley). */
export const DEFAULT_TOKEN_FILE = '/var/run/secrets/parley.dev/serviceaccount/token';

export interface ClientOptions {
  /** The Session API, e.g. https://parley-session-api.parley-system.svc:8082. */
  url: string;
  /** A bearer token, or a function that returns one for each request. */
  token?: string | (() => string | Promise<string>);
  /** A file holding the token, read again on every request (the kubelet rotates projected tokens). */
  tokenFile?: string;
  /** The CA of the API's certificate (PEM), or a file holding it; the system's CAs when absent. */
  ca?: string | Buffer;
  caFile?: string;
  /** How often a transient failure (network, 429, 502-504) is retried with the same body. Default 5. */
  retries?: number;
  /** Longest wait between tries, in ms, unless Retry-After asks for more. Default 10000. */
  maxBackoffMs?: number;
  /** Time limit of one request, in ms. Default 60000. */
  timeoutMs?: number;
}

/** An error answer of the Session API (application/problem+json, RFC 9457). */
export class ParleyProblem extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly title: string,
    readonly detail: string,
  ) {
    super(`Parley Session API: ${status} ${title}${detail ? `: ${detail}` : ''}`);
    this.name = 'ParleyProblem';
  }
}

const retryable = new Set([429, 502, 503, 504]);

/** The path of one conversation; the calls add a suffix. */
export function conversationPath(namespace: string, name: string): string {
  return `/v1/namespaces/${encodeURIComponent(namespace)}/conversations/${encodeURIComponent(name)}`;
}

/** A new message or event id. */
export function newId(): string {
  return randomUUID();
}

/**
 * The client of Parley's Session API, with the calls of the Go client (pkg/client). Every call
 * is idempotent — appends carry ids, a reset an id made per call — so transient failures are
 * retried with backoff and the same body, honouring Retry-After. Errors of the API are
 * ParleyProblem.
 */
export class ParleyClient {
  readonly url: URL;
  private readonly transport: Transport;
  private readonly tokenSource: () => Promise<string>;
  private readonly retries: number;
  private readonly maxBackoffMs: number;
  private readonly timeoutMs: number;
  /** Waits between tries; replaced by tests. */
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  constructor(options: ClientOptions) {
    let url: URL;
    try {
      url = new URL(options.url.replace(/\/+$/, ''));
    } catch {
      throw new Error(`parley client: ${JSON.stringify(options.url)} is not an http(s) URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`parley client: ${JSON.stringify(options.url)} is not an http(s) URL`);
    }
    this.url = url;
    const ca = options.ca ?? (options.caFile ? readFileSync(options.caFile) : undefined);
    this.transport = new Transport(url.protocol === 'https:', ca);
    this.retries = options.retries ?? 5;
    this.maxBackoffMs = options.maxBackoffMs ?? 10_000;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    const { token, tokenFile } = options;
    if (typeof token === 'string') {
      this.tokenSource = async () => token;
    } else if (typeof token === 'function') {
      this.tokenSource = async () => token();
    } else if (tokenFile) {
      this.tokenSource = async () => (await readFile(tokenFile, 'utf8')).trim();
    } else {
      this.tokenSource = async () => '';
    }
  }

  /**
   * A client configured the way an agent pod is set up: PARLEY_API_URL, the projected token
   * (PARLEY_TOKEN_FILE, else DEFAULT_TOKEN_FILE), the CA in PARLEY_CA_FILE when set.
   */
  static fromEnvironment(env: NodeJS.ProcessEnv = process.env): ParleyClient {
    return new ParleyClient({
      url: env.PARLEY_API_URL ?? '',
      tokenFile: env.PARLEY_TOKEN_FILE || DEFAULT_TOKEN_FILE,
      caFile: env.PARLEY_CA_FILE || undefined,
    });
  }

  /** A conversation's summary: session id, phase, head (epoch, sequence), counts. */
  conversation(namespace: string, name: string): Promise<Conversation> {
    return this.call('GET', conversationPath(namespace, name));
  }

  /** The messages after the sequence `after`, at most `limit` (0: the server's page of up to 1000). */
  messages(namespace: string, name: string, after = 0, limit = 0): Promise<MessagesPage> {
    const q = new URLSearchParams();
    if (after > 0) q.set('after', String(after));
    if (limit > 0) q.set('limit', String(limit));
    const query = q.size > 0 ? `?${q}` : '';
    return this.call('GET', `${conversationPath(namespace, name)}/messages${query}`);
  }

  /**
   * Every message of the current epoch, page by page. A compaction or reset between two pages
   * starts the read again, so the result is one epoch's.
   */
  async allMessages(namespace: string, name: string): Promise<MessagesPage> {
    for (let tries = 0; tries < 3; tries++) {
      const first = await this.messages(namespace, name);
      const out: MessagesPage = { epoch: first.epoch, messages: [...first.messages] };
      let next = first.next;
      while (next) {
        const page = await this.messages(namespace, name, next);
        if (page.epoch !== out.epoch) break;
        out.messages.push(...page.messages);
        next = page.next;
      }
      if (!next) return out;
    }
    throw new Error('parley client: the history moved to a new epoch three times while it was read');
  }

  /**
   * Stores messages in order and answers their sequences once durable. Every message needs an
   * id; a retry (by this client or the caller) stores nothing twice.
   */
  append(namespace: string, name: string, messages: Message[]): Promise<AppendResponse> {
    return this.call('POST', `${conversationPath(namespace, name)}/messages`, { messages });
  }

  /** Stores reducer events in order; each needs an id, repeated on a retry. */
  appendEvents(namespace: string, name: string, events: Event[]): Promise<SequencesResponse> {
    return this.call('POST', `${conversationPath(namespace, name)}/events`, { events });
  }

  /** Reports the adapter's latest state (the latest report wins). */
  async putAdapterState(namespace: string, name: string, state: AdapterStateRequest): Promise<void> {
    await this.call('PUT', `${conversationPath(namespace, name)}/adapter-state`, state);
  }

  /** Asks for a Manual Checkpoint and answers its name. */
  async checkpoint(namespace: string, name: string, req: CheckpointRequest = {}): Promise<string> {
    const out = await this.call<{ name: string }>('POST', `${conversationPath(namespace, name)}/checkpoints`, req);
    return out.name;
  }

  /** Asks the controller to compact the conversation now. */
  async compact(namespace: string, name: string): Promise<void> {
    await this.call('POST', `${conversationPath(namespace, name)}/compact`, {});
  }

  /**
   * Clears the history once a Reset Checkpoint holds it (the caller needs `delete` on
   * conversations/history). Without `req.id` one is made for this call, which every retry
   * repeats, so a retry answers the first reset instead of clearing again.
   */
  reset(namespace: string, name: string, req: ResetRequest = {}): Promise<ResetResponse> {
    return this.call('POST', `${conversationPath(namespace, name)}/reset`, { ...req, id: req.id ?? newId() });
  }

  /** The whole state of the current epoch: system prompt, messages, threads, adapter reports, records. */
  state(namespace: string, name: string): Promise<StateResponse> {
    return this.call('GET', `${conversationPath(namespace, name)}/state`);
  }

  /** Appends one part of a whole state; a retried part (same id and part) stores nothing twice. */
  importState(namespace: string, name: string, req: ImportRequest): Promise<SequencesResponse> {
    return this.call('POST', `${conversationPath(namespace, name)}/import`, req);
  }

  /** The resume bundle a new agent pod would mount now, cut at `turn` (0: the latest complete turn). */
  resume(namespace: string, name: string, turn = 0): Promise<ResumeBundle> {
    return this.call('GET', `${conversationPath(namespace, name)}/resume${turn > 0 ? `?turn=${turn}` : ''}`);
  }

  /**
   * Appends lines to the agent's own transcript. Without `req.batch` one is made for this
   * call, which every retry repeats, so lines without a uuid are stored once.
   */
  appendTranscript(namespace: string, name: string, req: TranscriptAppendRequest): Promise<SequencesResponse> {
    return this.call('POST', `${conversationPath(namespace, name)}/transcript`, { ...req, batch: req.batch ?? newId() });
  }

  /** One page of a transcript (the main one, or `subpath`'s) from the line `offset`. */
  transcriptPage(namespace: string, name: string, subpath?: string, offset = 0): Promise<TranscriptPage> {
    const q = new URLSearchParams();
    if (subpath !== undefined) q.set('subpath', subpath);
    if (offset > 0) q.set('offset', String(offset));
    const query = q.size > 0 ? `?${q}` : '';
    return this.call('GET', `${conversationPath(namespace, name)}/transcript${query}`);
  }

  /**
   * A whole transcript, page by page. A compaction or reset between two pages starts the read
   * again, so the lines are one epoch's.
   */
  async transcript(namespace: string, name: string, subpath?: string): Promise<TranscriptPage> {
    for (let tries = 0; tries < 3; tries++) {
      const first = await this.transcriptPage(namespace, name, subpath);
      const out: TranscriptPage = { ...first, entries: [...first.entries] };
      let next = first.next;
      while (next) {
        const page = await this.transcriptPage(namespace, name, subpath, next);
        if (page.epoch !== out.epoch) break;
        out.entries.push(...page.entries);
        next = page.next;
      }
      if (!next) {
        delete out.next;
        return out;
      }
    }
    throw new Error('parley client: the history moved to a new epoch three times while the transcript was read');
  }

  /** The transcripts of the conversation's session: the main one and its subagents'. */
  transcripts(namespace: string, name: string): Promise<TranscriptIndex> {
    return this.call('GET', `${conversationPath(namespace, name)}/transcripts`);
  }

  /**
   * The messages after the sequence `after`, as they are appended, until `signal` aborts or the
   * conversation moves to a new epoch (EpochChanged: read it again from the start). A dropped
   * stream is resumed from the last message seen.
   */
  follow(namespace: string, name: string, options: FollowOptions = {}): AsyncGenerator<{ sequence: number; message: Message }> {
    return followMessages(this, `${conversationPath(namespace, name)}/messages?follow=true`, options);
  }

  /** Closes idle connections (a process exits without it). */
  close(): void {
    this.transport.close();
  }

  /** The headers of a request, with the token read now. @internal */
  async headers(extra: Record<string, string> = {}): Promise<Record<string, string>> {
    const token = await this.tokenSource();
    return { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
  }

  /** @internal */
  get transportOf(): Transport {
    return this.transport;
  }

  /** @internal */
  get backoffLimitMs(): number {
    return this.maxBackoffMs;
  }

  // call sends a request, retrying what may succeed later with the same body. A 401 is tried
  // once more with the token read again: a projected token may have rotated in between.
  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const url = new URL(this.url.pathname.replace(/\/+$/, '') + path, this.url);
    let backoff = 100;
    let reauthorized = false;
    for (let attempt = 0; ; attempt++) {
      let failure: Error;
      let waitMs = 0;
      try {
        const headers = await this.headers(payload === undefined ? {} : { 'content-type': 'application/json' });
        const res = await this.transport.send({ method, url, headers, body: payload, timeoutMs: this.timeoutMs });
        if (res.status >= 200 && res.status < 300) {
          return (res.text ? JSON.parse(res.text) : undefined) as T;
        }
        const problem = problemOf(res.status, res.statusText, res.text);
        if (res.status === 401 && !reauthorized) {
          reauthorized = true;
          attempt--;
          continue;
        }
        if (!retryable.has(res.status)) {
          throw problem;
        }
        failure = problem;
        waitMs = 1000 * Number(res.headers['retry-after'] ?? 0) || 0;
      } catch (err) {
        if (err instanceof ParleyProblem || !transient(err)) {
          throw err;
        }
        failure = err as Error;
      }
      if (attempt >= this.retries) {
        throw failure;
      }
      if (waitMs === 0) {
        waitMs = backoff;
        backoff = Math.min(backoff * 2, this.maxBackoffMs);
      }
      await this.sleep(Math.min(waitMs, this.maxBackoffMs));
    }
  }
}

/**
 * Reads an error answer. One that is not the Session API's (a proxy in front of it answering
 * with a Kubernetes Status or plain text) keeps its message as the detail.
 */
export function problemOf(status: number, statusText: string, text: string): ParleyProblem {
  try {
    const p = JSON.parse(text) as { type?: string; title?: string; detail?: string; message?: string };
    if (p.type || p.detail) {
      return new ParleyProblem(status, p.type ?? '', p.title ?? statusText, p.detail ?? '');
    }
    return new ParleyProblem(status, '', statusText, p.message ?? '');
  } catch {
    const plain = text.trim();
    return new ParleyProblem(status, '', statusText, plain.length <= 512 ? plain : '');
  }
}
