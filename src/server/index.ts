// The reference server's public face.
export type { TurnLog, StoredTurn, IdempotencyRecord, NewTurnEvent, EventPage } from './turn-log.js';
