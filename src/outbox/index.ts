// The durable outbox: what `createLifeline` wires behind `conversation.send`.
export { createOutbox } from './outbox.js';
export type { OutboxController, OutboxDeps, OutboxStorage, OutboxChannel, NetworkMonitor, Enqueued } from './outbox.js';
export type { OutboxLocks } from './leadership.js';
