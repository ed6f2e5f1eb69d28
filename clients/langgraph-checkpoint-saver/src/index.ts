// @parley-dev/langgraph-checkpoint-saver: a LangGraph checkpoint saver whose threads are
// Parley Conversations (docs/agents.md).
//
//   import { ParleyCheckpointSaver } from '@parley-dev/langgraph-checkpoint-saver';
//   const graph = builder.compile({ checkpointer: new ParleyCheckpointSaver() });
//   await graph.invoke(input, { configurable: { thread_id: process.env.PARLEY_CONVERSATION } });

export { ParleyCheckpointSaver } from './saver.js';
export type { ParleyCheckpointSaverOptions } from './saver.js';
export { MESSAGES_CHANNEL, SOURCE_KIND } from './messages.js';
export { RECORD_PREFIX } from './records.js';
