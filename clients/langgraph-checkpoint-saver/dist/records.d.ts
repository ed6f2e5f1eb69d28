export declare const RECORD_PREFIX = "langgraph.";
export interface Serialized {
    t: string;
    json?: unknown;
    b64?: string;
}
export interface CheckpointRecord {
    type: 'langgraph.checkpoint';
    ns: string;
    id: string;
    parent?: string;
    checkpoint: Serialized;
    metadata: Serialized;
}
export interface BlobRecord {
    type: 'langgraph.blob';
    ns: string;
    channel: string;
    version: string | number;
    value?: Serialized;
}
export interface WriteRecord {
    idx: number;
    channel: string;
    value: Serialized;
}
export interface WritesRecord {
    type: 'langgraph.writes';
    ns: string;
    checkpoint: string;
    task: string;
    path?: string;
    writes: WriteRecord[];
}
export type SaverRecord = CheckpointRecord | BlobRecord | WritesRecord;
/** One stored write, as the index keeps it. */
export interface StoredWrite {
    task: string;
    path: string;
    idx: number;
    channel: string;
    value: Serialized;
}
/** The saver's records of one thread (one epoch of one Conversation), indexed. */
export declare class ThreadIndex {
    readonly epoch: number;
    sequence: number;
    /** Checkpoints by namespace, then id. */
    readonly checkpoints: Map<string, Map<string, CheckpointRecord>>;
    /** Blobs by blobKey. Null: the channel was emptied at that version. */
    readonly blobs: Map<string, Serialized | null>;
    /** Writes by checkpoint (writesKey), then `task,idx`. */
    readonly writes: Map<string, Map<string, StoredWrite>>;
    /** The ids of the messages the history holds. */
    readonly messageIds: Set<string>;
    constructor(epoch: number, sequence: number);
    /** Folds in one record; others than the saver's are ignored. */
    add(raw: unknown): void;
}
export declare function blobKey(ns: string, channel: string, version: string | number): string;
export declare function writesKey(ns: string, checkpointId: string): string;
