import type { Message } from '@parley-dev/session-api';
/** The source kind of messages this converter wrote. */
export declare const SOURCE_KIND = "openai-responses";
/** A Responses item as JSON: the SDK's AgentInputItem. */
export type Item = {
    type?: string;
    [member: string]: unknown;
};
/** The neutral message of an item, under the given message id. */
export declare function messageOf(item: Item, id: string): Message;
/** The items a message stands for: the one this converter stored, or those that say the same. */
export declare function itemsOf(message: Message, toolNames?: Map<string, string>): Item[];
