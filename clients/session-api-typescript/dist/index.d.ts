export { ParleyClient, ParleyProblem, DEFAULT_TOKEN_FILE, conversationPath, newId, problemOf } from './client.js';
export type { ClientOptions } from './client.js';
export { EpochChanged } from './follow.js';
export type { FollowOptions } from './follow.js';
export * from './types.js';
