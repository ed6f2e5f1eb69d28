import type { Message } from '@parley-dev/session-api';
/** The source kind of the messages the saver appends. */
export declare const SOURCE_KIND = "langgraph";
/** The channel the graph keeps its conversation in (MessagesAnnotation, MessagesValue). */
export declare const MESSAGES_CHANNEL = "messages";
/**
 * The neutral messages of a channel value that the history does not hold yet (by id).
 * Messages without an id, or of a kind with no neutral form, are left out.
 */
export declare function newMessages(value: unknown, held: ReadonlySet<string>): Message[];
