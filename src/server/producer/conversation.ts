import type { ConversationReader } from './agent.js';
import type { TurnLog } from '../log/turn-log.js';

/** What scopes a conversation read: the turn being produced, its conversation and principal. */
export interface ConversationScope {
  turnId: string;
  conversationId: string;
  principal: string;
}

/** The turn's conversation in `log`, as its principal sees it (§8), without the turn itself. */
export function conversationReader(log: TurnLog, { turnId, conversationId, principal }: ConversationScope): ConversationReader {
  return {
    turns: async (limit) => (await log.listTurns(conversationId, principal, limit + 1)).filter((turn) => turn.id !== turnId).slice(0, limit),
    read: (id, after, limit) => log.read(id, after, limit),
  };
}
