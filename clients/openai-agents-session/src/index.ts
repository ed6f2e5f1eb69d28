// @parley-dev/openai-agents-session: an OpenAI Agents SDK Session that keeps its items in a
// Parley Conversation (docs/agents.md).
//
//   import { Agent, run } from '@openai/agents';
//   import { ParleySession } from '@parley-dev/openai-agents-session';
//   await run(agent, 'hello', { session: new ParleySession() });   // configured from PARLEY_*

export { ParleySession } from './session.js';
export type { ParleySessionOptions } from './session.js';
export { itemsOf, messageOf, SOURCE_KIND } from './items.js';
export type { Item } from './items.js';
