import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { ParleyClient } from '@parley-dev/session-api';
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
export declare class ParleySessionStore implements SessionStore {
    private readonly client;
    private readonly namespace;
    private readonly conversation;
    private readonly maxBodyBytes;
    private sessionId;
    constructor(options?: ParleySessionStoreOptions);
    /** Stores entries in order. Entries with a uuid are stored once whatever brings them again. */
    append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void>;
    /** The entries of a transcript as appended (after whatever Parley held before them), or null. */
    load(key: SessionKey): Promise<SessionStoreEntry[] | null>;
    /** The Conversation's session, when it has a main transcript. */
    listSessions(_projectKey: string): Promise<Array<{
        sessionId: string;
        mtime: number;
    }>>;
    /** The subagent transcripts of the session (e.g. subagents/agent-<id>). */
    listSubkeys(key: {
        projectKey: string;
        sessionId: string;
    }): Promise<string[]>;
    private ownSession;
}
