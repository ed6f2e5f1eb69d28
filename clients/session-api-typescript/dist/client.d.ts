import { type FollowOptions } from './follow.js';
import { Transport } from './transport.js';
import type { AdapterStateRequest, AppendResponse, CheckpointRequest, Conversation, Event, ImportRequest, Message, MessagesPage, ResetRequest, ResetResponse, ResumeBundle, SequencesResponse, StateResponse, TranscriptAppendRequest, TranscriptIndex, TranscriptPage } from './types.js';
/** Where the operator mounts an agent's projected ServiceAccount token (audience parley). */
export declare const DEFAULT_TOKEN_FILE = "/var/run/secrets/parley.dev/serviceaccount/token";
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
export declare class ParleyProblem extends Error {
    readonly status: number;
    readonly type: string;
    readonly title: string;
    readonly detail: string;
    constructor(status: number, type: string, title: string, detail: string);
}
/** The path of one conversation; the calls add a suffix. */
export declare function conversationPath(namespace: string, name: string): string;
/** A new message or event id. */
export declare function newId(): string;
/**
 * The client of Parley's Session API, with the calls of the Go client (pkg/client). Every call
 * is idempotent — appends carry ids, a reset an id made per call — so transient failures are
 * retried with backoff and the same body, honouring Retry-After. Errors of the API are
 * ParleyProblem.
 */
export declare class ParleyClient {
    readonly url: URL;
    private readonly transport;
    private readonly tokenSource;
    private readonly retries;
    private readonly maxBackoffMs;
    private readonly timeoutMs;
    /** Waits between tries; replaced by tests. */
    sleep: (ms: number) => Promise<void>;
    constructor(options: ClientOptions);
    /**
     * A client configured the way an agent pod is set up: PARLEY_API_URL, the projected token
     * (PARLEY_TOKEN_FILE, else DEFAULT_TOKEN_FILE), the CA in PARLEY_CA_FILE when set.
     */
    static fromEnvironment(env?: NodeJS.ProcessEnv): ParleyClient;
    /** A conversation's summary: session id, phase, head (epoch, sequence), counts. */
    conversation(namespace: string, name: string): Promise<Conversation>;
    /** The messages after the sequence `after`, at most `limit` (0: the server's page of up to 1000). */
    messages(namespace: string, name: string, after?: number, limit?: number): Promise<MessagesPage>;
    /**
     * Every message of the current epoch, page by page. A compaction or reset between two pages
     * starts the read again, so the result is one epoch's.
     */
    allMessages(namespace: string, name: string): Promise<MessagesPage>;
    /**
     * Stores messages in order and answers their sequences once durable. Every message needs an
     * id; a retry (by this client or the caller) stores nothing twice.
     */
    append(namespace: string, name: string, messages: Message[]): Promise<AppendResponse>;
    /** Stores reducer events in order; each needs an id, repeated on a retry. */
    appendEvents(namespace: string, name: string, events: Event[]): Promise<SequencesResponse>;
    /** Reports the adapter's latest state (the latest report wins). */
    putAdapterState(namespace: string, name: string, state: AdapterStateRequest): Promise<void>;
    /** Asks for a Manual Checkpoint and answers its name. */
    checkpoint(namespace: string, name: string, req?: CheckpointRequest): Promise<string>;
    /** Asks the controller to compact the conversation now. */
    compact(namespace: string, name: string): Promise<void>;
    /**
     * Clears the history once a Reset Checkpoint holds it (the caller needs `delete` on
     * conversations/history). Without `req.id` one is made for this call, which every retry
     * repeats, so a retry answers the first reset instead of clearing again.
     */
    reset(namespace: string, name: string, req?: ResetRequest): Promise<ResetResponse>;
    /** The whole state of the current epoch: system prompt, messages, threads, adapter reports, records. */
    state(namespace: string, name: string): Promise<StateResponse>;
    /** Appends one part of a whole state; a retried part (same id and part) stores nothing twice. */
    importState(namespace: string, name: string, req: ImportRequest): Promise<SequencesResponse>;
    /** The resume bundle a new agent pod would mount now, cut at `turn` (0: the latest complete turn). */
    resume(namespace: string, name: string, turn?: number): Promise<ResumeBundle>;
    /**
     * Appends lines to the agent's own transcript. Without `req.batch` one is made for this
     * call, which every retry repeats, so lines without a uuid are stored once.
     */
    appendTranscript(namespace: string, name: string, req: TranscriptAppendRequest): Promise<SequencesResponse>;
    /** One page of a transcript (the main one, or `subpath`'s) from the line `offset`. */
    transcriptPage(namespace: string, name: string, subpath?: string, offset?: number): Promise<TranscriptPage>;
    /**
     * A whole transcript, page by page. A compaction or reset between two pages starts the read
     * again, so the lines are one epoch's.
     */
    transcript(namespace: string, name: string, subpath?: string): Promise<TranscriptPage>;
    /** The transcripts of the conversation's session: the main one and its subagents'. */
    transcripts(namespace: string, name: string): Promise<TranscriptIndex>;
    /**
     * The messages after the sequence `after`, as they are appended, until `signal` aborts or the
     * conversation moves to a new epoch (EpochChanged: read it again from the start). A dropped
     * stream is resumed from the last message seen.
     */
    follow(namespace: string, name: string, options?: FollowOptions): AsyncGenerator<{
        sequence: number;
        message: Message;
    }>;
    /** Closes idle connections (a process exits without it). */
    close(): void;
    /** The headers of a request, with the token read now. @internal */
    headers(extra?: Record<string, string>): Promise<Record<string, string>>;
    /** @internal */
    get transportOf(): Transport;
    /** @internal */
    get backoffLimitMs(): number;
    private call;
}
/**
 * Reads an error answer. One that is not the Session API's (a proxy in front of it answering
 * with a Kubernetes Status or plain text) keeps its message as the detail.
 */
export declare function problemOf(status: number, statusText: string, text: string): ParleyProblem;
