import type { AgentInputItem, Session } from '@openai/agents-core';
import { ParleyClient } from '@parley-dev/session-api';
export interface ParleySessionOptions {
    /** The Session API client. Default: ParleyClient.fromEnvironment() (the agent pod's). */
    client?: ParleyClient;
    /** The Conversation's namespace. Default: PARLEY_NAMESPACE. */
    namespace?: string;
    /** The Conversation's name. Default: PARLEY_CONVERSATION. */
    conversation?: string;
    /** What getSessionId answers. Default: the Conversation's session id. */
    sessionId?: string;
}
/**
 * An OpenAI Agents SDK Session whose items are the messages of a Parley Conversation
 * (docs/agents.md). Items are appended through the Session API, one message each, and read
 * back deep-equal; the messages are what `kubectl parley history`, checkpoints and resume
 * bundles see. The history is append-only: `clearSession` is a Session API reset (the history
 * before it is kept in a Reset Checkpoint), and `popItem` a reset followed by appending the
 * items before the popped one again — both need `delete` on conversations/history, which
 * the agent role does not grant. One writer per Conversation is assumed: an item another
 * writer appends between a popItem's read and its reset is held by the Reset Checkpoint, not
 * kept.
 */
export declare class ParleySession implements Session {
    private readonly client;
    private readonly namespace;
    private readonly conversation;
    private sessionId;
    private epoch;
    private after;
    private entries;
    constructor(options?: ParleySessionOptions);
    /** The Conversation's session id (status.sessionID). */
    getSessionId(): Promise<string>;
    /** The items in order; with `limit`, the latest `limit` of them. */
    getItems(limit?: number): Promise<AgentInputItem[]>;
    /** Appends the items in order, one message each; a retried request stores nothing twice. */
    addItems(items: AgentInputItem[]): Promise<void>;
    /** Removes the latest item and answers it (a reset, then the earlier items appended again). */
    popItem(): Promise<AgentInputItem | undefined>;
    /** Clears the Conversation's history; a Reset Checkpoint keeps what it held. */
    clearSession(): Promise<void>;
    private appendMessages;
    private allItems;
    private forget;
}
