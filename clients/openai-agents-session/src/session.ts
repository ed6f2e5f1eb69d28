import type { AgentInputItem, Session } from '@openai/agents-core';
import { newId, ParleyClient, type Message } from '@parley-dev/session-api';

import { itemsOf, messageOf, type Item } from './items.js';

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

// The Session API takes at most 500 messages per append.
const MAX_BATCH = 500;

/** The items of one stored message, with its sequence. */
interface Entry {
  seq: number;
  message: Message;
  items: Item[];
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
export class ParleySession implements Session {
  private readonly client: ParleyClient;
  private readonly namespace: string;
  private readonly conversation: string;
  private sessionId: string | undefined;
  // What was read of the current epoch; only new messages are read on the next call.
  private epoch = -1;
  private after = 0;
  private entries: Entry[] = [];

  constructor(options: ParleySessionOptions = {}) {
    const env = process.env;
    this.client = options.client ?? ParleyClient.fromEnvironment();
    const namespace = options.namespace ?? env.PARLEY_NAMESPACE;
    const conversation = options.conversation ?? env.PARLEY_CONVERSATION;
    if (!namespace || !conversation) {
      throw new Error('ParleySession: the namespace and conversation are needed (options namespace, conversation or PARLEY_NAMESPACE, PARLEY_CONVERSATION)');
    }
    this.namespace = namespace;
    this.conversation = conversation;
    const own = namespace === env.PARLEY_NAMESPACE && conversation === env.PARLEY_CONVERSATION;
    this.sessionId = options.sessionId ?? ((own && env.PARLEY_SESSION_ID) || undefined);
  }

  /** The Conversation's session id (status.sessionID). */
  async getSessionId(): Promise<string> {
    this.sessionId ??= (await this.client.conversation(this.namespace, this.conversation)).sessionId;
    return this.sessionId;
  }

  /** The items in order; with `limit`, the latest `limit` of them. */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const items = await this.allItems();
    if (limit === undefined) {
      return items as AgentInputItem[];
    }
    return (limit <= 0 ? [] : items.slice(Math.max(items.length - limit, 0))) as AgentInputItem[];
  }

  /** Appends the items in order, one message each; a retried request stores nothing twice. */
  async addItems(items: AgentInputItem[]): Promise<void> {
    await this.appendMessages(items.map((item) => messageOf(item as Item, newId())));
  }

  /** Removes the latest item and answers it (a reset, then the earlier items appended again). */
  async popItem(): Promise<AgentInputItem | undefined> {
    const items = await this.allItems();
    const popped = items.at(-1);
    if (popped === undefined) {
      return undefined;
    }
    // Messages before the last are appended again as they were (same ids); of the last
    // message, the items before the popped one (a foreign message may stand for several).
    const keep: Message[] = this.entries.slice(0, -1).map((e) => restorable(e.message));
    const last = this.entries.at(-1)!;
    keep.push(...last.items.slice(0, -1).map((item) => messageOf(item, newId())));
    await this.clearSession();
    await this.appendMessages(keep);
    return popped as AgentInputItem;
  }

  /** Clears the Conversation's history; a Reset Checkpoint keeps what it held. */
  async clearSession(): Promise<void> {
    try {
      await this.client.reset(this.namespace, this.conversation, { keepSystem: true });
    } finally {
      this.forget();
    }
  }

  private async appendMessages(messages: Message[]): Promise<void> {
    for (let i = 0; i < messages.length; i += MAX_BATCH) {
      await this.client.append(this.namespace, this.conversation, messages.slice(i, i + MAX_BATCH));
    }
  }

  // allItems reads the messages appended since the last call (the whole epoch again when it
  // changed) and answers every item.
  private async allItems(): Promise<Item[]> {
    for (let tries = 0; tries < 3; tries++) {
      let page = await this.client.messages(this.namespace, this.conversation, this.after);
      if (page.epoch !== this.epoch && this.after > 0) {
        this.forget();
        continue;
      }
      this.epoch = page.epoch;
      for (;;) {
        for (const m of page.messages) {
          this.entries.push({ seq: m.seq ?? 0, message: m, items: [] });
          this.after = Math.max(this.after, m.seq ?? 0);
        }
        if (!page.next) break;
        page = await this.client.messages(this.namespace, this.conversation, page.next);
        if (page.epoch !== this.epoch) break;
      }
      if (page.epoch !== this.epoch) {
        this.forget();
        continue;
      }
      // Tool names of calls answered by foreign tool results come from earlier messages.
      const toolNames = new Map<string, string>();
      for (const e of this.entries) e.items = itemsOf(e.message, toolNames);
      return this.entries.flatMap((e) => e.items).map((item) => structuredClone(item));
    }
    throw new Error('ParleySession: the history moved to a new epoch three times while it was read');
  }

  private forget(): void {
    this.epoch = -1;
    this.after = 0;
    this.entries = [];
  }
}

// restorable is a stored message as an append sends it again: without the numbers its
// position gave it.
function restorable(m: Message): Message {
  const { seq: _seq, turn: _turn, ...rest } = m;
  return rest;
}
