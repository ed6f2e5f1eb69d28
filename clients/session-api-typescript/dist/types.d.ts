/** Who produced a message. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';
/**
 * One piece of a message's content (pkg/conversation Block). Which members are used depends
 * on `type`: text (text), thinking (text, signature), redacted_thinking (data), tool_use
 * (toolUseId, toolName, input, arguments), tool_result (toolUseId, isError, text or content),
 * image and document (media); a block of any other type keeps the provider's JSON in `raw`.
 */
export interface Block {
    type: string;
    id?: string;
    status?: '' | 'pending' | 'error';
    text?: string;
    signature?: string;
    data?: string;
    toolUseId?: string;
    toolName?: string;
    /** A tool call's arguments as a JSON value. */
    input?: unknown;
    /** The exact argument string the provider sent (OpenAI's function.arguments). */
    arguments?: string;
    isError?: boolean;
    content?: Block[];
    media?: MediaRef;
    raw?: unknown;
    /** Provider members of a known block the model has no field for, written back to that provider only. */
    extra?: Record<string, unknown>;
}
export interface MediaRef {
    sourceType?: string;
    mediaType?: string;
    url?: string;
    fileId?: string;
    data?: string;
    title?: string;
}
export interface Usage {
    input?: number;
    output?: number;
    cacheRead?: number;
    cacheWrite?: number;
}
/** Where a message came from, so it can be written back in its own format. */
export interface Source {
    kind?: string;
    ids?: string[];
    /** The format's own data the model has no field for. */
    raw?: unknown;
}
/** One message of a conversation (pkg/conversation Message). `id` is required to append. */
export interface Message {
    id: string;
    seq?: number;
    parentId?: string;
    role: Role;
    blocks?: Block[];
    name?: string;
    model?: string;
    usage?: Usage;
    turn?: number;
    createdAt?: string;
    flags?: number;
    source?: Source;
    [member: string]: unknown;
}
/** A transcript record the model does not understand, kept to be written back (State.Records). */
export interface RawRecord {
    afterId?: string;
    afterLine?: string;
    thread?: string;
    raw: unknown;
}
/** A whole conversation (pkg/conversation State). */
export interface State {
    schemaVersion: string;
    sessionId?: string;
    cwd?: string;
    system?: Message;
    messages?: Message[];
    subagents?: unknown[];
    adapters?: unknown[];
    records?: RawRecord[];
    source?: Source;
    [member: string]: unknown;
}
/** GET …/conversations/{name}. */
export interface Conversation {
    namespace: string;
    name: string;
    sessionId: string;
    phase?: string;
    /** The head of the history: its epoch and last stored sequence. */
    epoch: number;
    sequence: number;
    messages: number;
    turns: number;
    tokens: number;
    limit?: number;
    expiresAt?: string;
}
/** GET …/messages. `next` is the `after` of the next page, absent at the head. */
export interface MessagesPage {
    epoch: number;
    messages: Message[];
    next?: number;
}
export interface AppendResponse {
    epoch: number;
    sequences: number[];
}
/** A reducer event (pkg/conversation Event) with the id that makes it idempotent. */
export interface Event {
    id: string;
    event: {
        type: string;
        [member: string]: unknown;
    };
}
export interface SequencesResponse {
    sequences: number[];
}
export interface AdapterStateRequest {
    type: string;
    state: Record<string, unknown>;
}
export interface CheckpointRequest {
    name?: string;
    turn?: number;
}
export interface ResetRequest {
    /** Repeated by every retry, so a retried reset answers the first one. Made per call when absent. */
    id?: string;
    keepSystem?: boolean;
}
export interface ResetResponse {
    checkpoint?: string;
    epoch?: number;
    cleared: number;
    kept?: number;
}
export interface StateResponse {
    epoch: number;
    sequence: number;
    tokens: number;
    state: State;
}
export interface ImportRequest {
    /** Names the import (1-64 letters, digits, '.', '_', '-'): a retried part stores nothing twice. */
    id: string;
    part: number;
    state: State;
}
export interface ResumeBundle {
    sessionId: string;
    turn: number;
    attempt: number;
    files: Record<string, string>;
}
/** One line of an agent's own transcript (a Claude Agent SDK SessionStore entry). */
export interface TranscriptEntry {
    type: string;
    uuid?: string;
    [member: string]: unknown;
}
/**
 * POST …/transcript: lines appended in order to the main transcript or a subagent's
 * (`subpath`, e.g. subagents/agent-<id>). A line with a uuid is stored once per transcript;
 * lines without one once per `batch` and position.
 */
export interface TranscriptAppendRequest {
    subpath?: string;
    /** Repeated by every retry, so lines without a uuid are stored once. Made per call when absent. */
    batch?: string;
    entries: TranscriptEntry[];
}
/** GET …/transcript: lines from an offset. `next` is the offset of the next page, absent at the end. */
export interface TranscriptPage {
    subpath?: string;
    /** The epoch the lines come from: a read of several pages starts again when it changes. */
    epoch: number;
    /** False when the transcript has no line at all. */
    exists: boolean;
    entries: TranscriptEntry[];
    next?: number;
}
/** GET …/transcripts: the transcripts of the conversation's one session, the main one first. */
export interface TranscriptIndex {
    sessionId: string;
    epoch: number;
    transcripts: {
        subpath?: string;
        modified?: string;
    }[];
}
/** Problem types (RFC 9457 `type`) the Session API answers with. */
export declare const Problems: {
    readonly malformed: 'https://parley.dev/problems/malformed';
    readonly unauthorized: 'https://parley.dev/problems/unauthorized';
    readonly forbidden: 'https://parley.dev/problems/forbidden';
    readonly notFound: 'https://parley.dev/problems/not-found';
    readonly conflict: 'https://parley.dev/problems/conflict';
    readonly tooLarge: 'https://parley.dev/problems/too-large';
    readonly invalid: 'https://parley.dev/problems/invalid';
    readonly overloaded: 'https://parley.dev/problems/overloaded';
    readonly unavailable: 'https://parley.dev/problems/storage-unavailable';
    readonly notReady: 'https://parley.dev/problems/not-ready';
};
