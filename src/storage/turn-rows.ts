/**
 * What a turn's row says besides its events: the metadata the followed turn reports
 * (conversation, message, status) and the user message that started it. A row write
 * replaces the whole row, so every write carries both; rows read back teach the message.
 */
import type { StorageError } from '../errors.js';
import type { MessageContent } from '../protocol/schemas.js';
import type { LoadedTurn, Store, TurnRecord, TurnStatus } from './store.js';

/** What the persistence layer asks a followed turn when it writes its row. */
export interface TurnMeta {
  conversationId: string;
  messageId?: string;
  operationId?: string;
  status: TurnStatus;
  createdAt: number;
}

/** The user message that started a turn, as its row keeps it. */
export interface TurnMessage {
  content: MessageContent;
  operationId?: string | undefined;
}

export interface TurnRows {
  /** Registers how to describe a turn's row; `meta` answers `undefined` while it cannot be written yet. */
  track(turnId: string, meta: () => TurnMeta | undefined): void;
  /** Forgets a disposed follower's description (it must not stay reachable after `clearStorage()`). */
  untrack(turnId: string): void;
  setMessage(turnId: string, message: TurnMessage): void;
  message(turnId: string): TurnMessage | undefined;
  /** The turn's row as of now, or `undefined` while its conversation is unknown. */
  row(turnId: string, lastSeq: number): TurnRecord | undefined;
  /** Stored rows by `filter`: corrupt ones reported, user messages learnt. */
  load(target: Store, filter: Parameters<Store['loadTurns']>[0]): Promise<TurnRecord[]>;
  /** One stored turn with its events: corrupt chunks reported, its user message learnt. */
  loadTurn(target: Store, turnId: string): Promise<LoadedTurn | undefined>;
  /** Forgets every user message (logout). */
  clearMessages(): void;
}

export function createTurnRows(now: () => number, report: (errors?: readonly StorageError[]) => void): TurnRows {
  const metas = new Map<string, () => TurnMeta | undefined>();
  let messages = new Map<string, TurnMessage>();

  /** Keeps the user message a stored row carries, so the turn's next row write keeps it too. */
  const learn = ({ id, content, operationId }: TurnRecord): void => {
    if (content !== undefined && !messages.has(id)) messages.set(id, { content, operationId });
  };

  return {
    track: (turnId, meta) => void metas.set(turnId, meta),
    untrack: (turnId) => void metas.delete(turnId),
    setMessage: (turnId, message) => void messages.set(turnId, message),
    message: (turnId) => messages.get(turnId),
    row(turnId, lastSeq) {
      const meta = metas.get(turnId)?.();
      const message = messages.get(turnId);
      return meta && { ...meta, ...(message && { content: message.content }), id: turnId, lastSeq, updatedAt: now() };
    },
    async load(target, filter) {
      const { items, skipped } = await target.loadTurns(filter);
      report(skipped);
      items.forEach(learn);
      return items;
    },
    async loadTurn(target, turnId) {
      const turn = await target.loadTurn(turnId);
      if (turn) {
        report(turn.skipped);
        learn(turn.record);
      }
      return turn;
    },
    clearMessages: () => void (messages = new Map()),
  };
}
