import type { ParleyClient } from './client.js';
import type { Message } from './types.js';
/** Ends a follow when the conversation moved to a new epoch (a compaction or a reset). */
export declare class EpochChanged extends Error {
    name: string;
    constructor();
}
export interface FollowOptions {
    /** Start after this sequence (0: from the first message). */
    after?: number;
    /** Ends the stream. */
    signal?: AbortSignal;
}
export declare function followMessages(client: ParleyClient, path: string, options: FollowOptions): AsyncGenerator<{
    sequence: number;
    message: Message;
}>;
