import type { RunnableConfig } from '@langchain/core/runnables';
import { BaseCheckpointSaver, type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, type PendingWrite, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { ParleyClient } from '@parley-dev/session-api';
export interface ParleyCheckpointSaverOptions {
    /** The Session API client. Default: ParleyClient.fromEnvironment() (the agent pod's). */
    client?: ParleyClient;
    /** The namespace of the threads' Conversations. Default: PARLEY_NAMESPACE. */
    namespace?: string;
    /**
     * The Conversation that holds a thread. Default: the Conversation named like the thread id
     * (in an agent pod, run the graph with thread_id = PARLEY_CONVERSATION).
     */
    conversationFor?: (threadId: string) => string | Promise<string>;
    /** The serializer of checkpoints and writes. Default: LangGraph's JsonPlusSerializer. */
    serde?: SerializerProtocol;
}
/**
 * A LangGraph checkpoint saver whose threads are Parley Conversations (docs/agents.md): a
 * thread's checkpoints, channel values and pending writes are records of its Conversation's
 * history (see records.ts), and the graph's messages are the Conversation's messages.
 *
 * Each saver reads a thread's records once and keeps them indexed; before answering from the
 * index it asks the Conversation's head (one small request) and reads the records again only
 * when another writer moved it. `list` without a thread id lists the threads this saver used.
 * `deleteThread` is a Session API reset (the history before it is kept in a Reset Checkpoint),
 * which needs `delete` on conversations/history.
 */
export declare class ParleyCheckpointSaver extends BaseCheckpointSaver {
    private readonly client;
    private readonly namespace;
    private readonly conversationFor;
    private readonly threads;
    private readonly used;
    constructor(options?: ParleyCheckpointSaverOptions);
    getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
    list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple>;
    put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig>;
    putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void>;
    /** Clears the thread's Conversation (a reset: a Reset Checkpoint keeps what it held). */
    deleteThread(threadId: string): Promise<void>;
    private index;
    private appendRecords;
    private advance;
    private tupleOf;
    private pendingWrites;
    private migratePendingSends;
    private dumps;
    private loads;
}
