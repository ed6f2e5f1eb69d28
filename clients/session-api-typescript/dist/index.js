// @parley-dev/session-api: the TypeScript client of Parley's Session API (docs/session-api.md),
// shared by the agent framework adapters under clients/.
//
//   import { ParleyClient } from '@parley-dev/session-api';
//   const api = ParleyClient.fromEnvironment();   // inside an agent pod
//   const page = await api.messages(process.env.PARLEY_NAMESPACE!, process.env.PARLEY_CONVERSATION!);
export { ParleyClient, ParleyProblem, DEFAULT_TOKEN_FILE, conversationPath, newId, problemOf } from './client.js';
export { EpochChanged } from './follow.js';
export * from './types.js';
