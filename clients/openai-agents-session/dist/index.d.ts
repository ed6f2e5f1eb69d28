export { ParleySession } from './session.js';
export type { ParleySessionOptions } from './session.js';
export { itemsOf, messageOf, SOURCE_KIND } from './items.js';
export type { Item } from './items.js';
