export { ParleyCheckpointSaver } from './saver.js';
export type { ParleyCheckpointSaverOptions } from './saver.js';
export { MESSAGES_CHANNEL, SOURCE_KIND } from './messages.js';
export { RECORD_PREFIX } from './records.js';
