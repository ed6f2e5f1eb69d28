// ParleySessionStore: a Claude Agent SDK SessionStore that keeps the agent's transcript in a
// Parley Conversation, through the Session API (docs/agents.md, docs/session-api.md).
//
//   import { query } from '@anthropic-ai/claude-agent-sdk';
//   import { ParleySessionStore } from '@parley-dev/claude-session-store';
//   query({ prompt, options: { sessionStore: new ParleySessionStore(), resume: process.env.PARLEY_SESSION_ID } });
//
// Inside an agent pod it needs no configuration: the Conversation, its session id and the API
// come from the PARLEY_* variables the operator sets, the token from the projected file
// (re-read on every call, since the kubelet rotates it). Nothing but the SDK's types and the
// runtime's fetch: for the Session API's own CA, start node with
// NODE_EXTRA_CA_CERTS=$PARLEY_CA_FILE (Node reads it at start-up), or pass a fetch that trusts it.
import { readFile } from 'node:fs/promises';
/** Where the operator mounts the agent's projected ServiceAccount token (audience parley). */
export const DEFAULT_TOKEN_FILE = '/var/run/secrets/parley.dev/serviceaccount/token';
/** An error answer of the Session API (application/problem+json). */
export class ParleyProblem extends Error {
    status;
    type;
    title;
    detail;
    constructor(status, type, title, detail) {
        super(`Parley Session API: ${status} ${title}${detail ? `: ${detail}` : ''}`);
        this.status = status;
        this.type = type;
        this.title = title;
        this.detail = detail;
        this.name = 'ParleyProblem';
    }
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
export class ParleySessionStore {
    base;
    opts;
    fetchFn;
    tokenSource;
    sessionId;
    constructor(options = {}) {
        const env = process.env;
        const url = options.url ?? env.PARLEY_API_URL;
        const namespace = options.namespace ?? env.PARLEY_NAMESPACE;
        const conversation = options.conversation ?? env.PARLEY_CONVERSATION;
        if (!url || !namespace || !conversation) {
            throw new Error('ParleySessionStore: the Session API URL, namespace and conversation are needed (options url, namespace, conversation or PARLEY_API_URL, PARLEY_NAMESPACE, PARLEY_CONVERSATION)');
        }
        this.base = `${url.replace(/\/+$/, '')}/v1/namespaces/${encodeURIComponent(namespace)}/conversations/${encodeURIComponent(conversation)}`;
        // PARLEY_SESSION_ID is the session of the pod's own Conversation, not of one named here.
        const own = namespace === env.PARLEY_NAMESPACE && conversation === env.PARLEY_CONVERSATION;
        this.sessionId = options.sessionId ?? ((own && env.PARLEY_SESSION_ID) || undefined);
        this.fetchFn = options.fetch ?? globalThis.fetch;
        this.opts = {
            attempts: options.attempts ?? 5,
            maxBackoffMs: options.maxBackoffMs ?? 4000,
            timeoutMs: options.timeoutMs ?? 20000,
            maxBodyBytes: options.maxBodyBytes ?? 3 << 20,
        };
        const { token } = options;
        if (typeof token === 'string') {
            this.tokenSource = async () => token;
        }
        else if (typeof token === 'function') {
            this.tokenSource = async () => token();
        }
        else {
            const file = options.tokenFile ?? env.PARLEY_TOKEN_FILE ?? DEFAULT_TOKEN_FILE;
            this.tokenSource = async () => (await readFile(file, 'utf8')).trim();
        }
    }
    /** Stores entries in order. Entries with a uuid are stored once whatever brings them again. */
    async append(key, entries) {
        if (entries.length === 0) {
            return;
        }
        const own = await this.ownSession();
        if (key.sessionId !== own) {
            throw new Error(`ParleySessionStore: this Conversation holds session ${own}, not ${key.sessionId}; run the SDK with sessionId or resume ${own} (a fork is a new Conversation)`);
        }
        const head = key.subpath === undefined ? '{' : `{"subpath":${JSON.stringify(key.subpath)},`;
        for (const chunk of chunks(entries.map((e) => JSON.stringify(e)), this.opts.maxBodyBytes - head.length - 100)) {
            // One batch id per request, repeated on every try: entries without a uuid are stored
            // once per batch and position.
            const body = `${head}"batch":"${globalThis.crypto.randomUUID()}","entries":[${chunk.join(',')}]}`;
            await this.call('POST', '/transcript', body);
        }
    }
    /** The entries of a transcript as appended (after whatever Parley held before them), or null. */
    async load(key) {
        if (key.sessionId !== (await this.ownSession())) {
            return null;
        }
        const query = key.subpath === undefined ? '' : `subpath=${encodeURIComponent(key.subpath)}&`;
        // A compaction between two pages starts a new epoch: read again from the start.
        for (let tries = 0; tries < 3; tries++) {
            const entries = [];
            let epoch;
            let offset = 0;
            let exists = false;
            for (;;) {
                const page = (await this.call('GET', `/transcript?${query}offset=${offset}`));
                if (epoch !== undefined && page.epoch !== epoch) {
                    break;
                }
                epoch = page.epoch;
                exists = page.exists;
                entries.push(...page.entries);
                if (!page.next) {
                    return exists ? entries : null;
                }
                offset = page.next;
            }
        }
        throw new Error('ParleySessionStore: the history was compacted three times while the transcript was read');
    }
    /** The Conversation's session, when it has a main transcript. */
    async listSessions(_projectKey) {
        const index = (await this.call('GET', '/transcripts'));
        this.sessionId ??= index.sessionId;
        const main = index.transcripts.find((t) => !t.subpath);
        if (!main) {
            return [];
        }
        return [{ sessionId: index.sessionId, mtime: main.modified ? Math.floor(Date.parse(main.modified)) : 0 }];
    }
    /** The subagent transcripts of the session (e.g. subagents/agent-<id>). */
    async listSubkeys(key) {
        const index = (await this.call('GET', '/transcripts'));
        this.sessionId ??= index.sessionId;
        if (key.sessionId !== index.sessionId) {
            return [];
        }
        return index.transcripts.flatMap((t) => (t.subpath ? [t.subpath] : []));
    }
    async ownSession() {
        if (this.sessionId === undefined) {
            const conv = (await this.call('GET', ''));
            this.sessionId = conv.sessionId;
        }
        return this.sessionId;
    }
    // call sends a request, retrying what may succeed later with the same body.
    async call(method, path, body) {
        for (let attempt = 1;; attempt++) {
            let retryAfterMs = 0;
            let failure;
            try {
                const res = await this.fetchFn(this.base + path, {
                    method,
                    body,
                    headers: {
                        authorization: `Bearer ${await this.tokenSource()}`,
                        accept: 'application/json',
                        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
                    },
                    signal: AbortSignal.timeout(this.opts.timeoutMs),
                });
                const text = await res.text();
                if (res.ok) {
                    return text ? JSON.parse(text) : undefined;
                }
                failure = problemOf(res.status, res.statusText, text);
                if (![429, 502, 503, 504].includes(res.status)) {
                    throw failure;
                }
                retryAfterMs = 1000 * Number(res.headers.get('retry-after') ?? 0) || 0;
            }
            catch (err) {
                if (err instanceof ParleyProblem && ![429, 502, 503, 504].includes(err.status)) {
                    throw err;
                }
                failure = explain(err, this.base);
            }
            if (attempt >= this.opts.attempts) {
                throw failure;
            }
            const backoff = Math.min(this.opts.maxBackoffMs, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
            await new Promise((resolve) => setTimeout(resolve, Math.max(backoff, retryAfterMs)));
        }
    }
}
// chunks groups encoded entries into requests of at most MAX_BATCH entries and maxBytes
// (an entry larger than that goes alone, and the API says whether it takes it).
function chunks(encoded, maxBytes) {
    const out = [];
    let current = [];
    let size = 0;
    for (const e of encoded) {
        const n = Buffer.byteLength(e) + 1;
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
function problemOf(status, statusText, text) {
    try {
        const p = JSON.parse(text);
        return new ParleyProblem(status, p.type ?? '', p.title ?? statusText, p.detail ?? '');
    }
    catch {
        return new ParleyProblem(status, '', statusText, '');
    }
}
// explain turns a network failure into an error that says what to do about a CA Node does
// not trust.
function explain(err, base) {
    const cause = err?.cause;
    const code = cause?.code ?? '';
    if (base.startsWith('https:') && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
        return new Error(`ParleySessionStore: the Session API's certificate is not trusted (${code}); start node with NODE_EXTRA_CA_CERTS=$PARLEY_CA_FILE`, { cause: err });
    }
    return err instanceof Error ? err : new Error(String(err));
}
