import type { ActionStatus, JsonObject, JsonValue, MessageContent, PartObject } from '../../protocol/schemas.js';
import type { EventPage, StoredTurn } from '../log/turn-log.js';

/** The conversation's log as an agent may read it: the handler's own turn log, scoped to the turn's principal. */
export interface ConversationReader {
  /** The conversation's turns before this one, newest first, at most `limit` (1 to 200). */
  turns(limit: number): Promise<StoredTurn[]>;
  /** Events of one of those turns with seq > `after`, at most `limit`, as a replay page (docs/protocol.md §3). */
  read(turnId: string, after: number, limit: number): Promise<EventPage>;
}

/** What the handler tells the agent about the turn it is producing. */
export interface AgentContext {
  /** The turn being produced (server-minted). */
  turnId: string;
  conversationId: string;
  messageId: string;
  /** The submitted message's `content`, exactly as validated. */
  content: MessageContent;
  /**
   * The submission's per-request `context` (docs/protocol.md §1; the AI SDK's `body` and
   * request `metadata`), for this turn only; `undefined` when none was sent.
   */
  context: JsonObject | undefined;
  /** The submit request's headers, for this turn only: never stored (docs/protocol.md §1). */
  headers: Headers;
  /** A continuation turn (docs/protocol.md §9): the id of the assistant message it continues. */
  continues: string | undefined;
  /** The conversation so far, read from the handler's turn log. */
  conversation: ConversationReader;
  /** Who submitted it (see `authorize`); `'anonymous'` without auth. */
  principal: string;
  /**
   * Aborts when the turn is cancelled or the handler closes. The handler stops reading
   * the agent at once either way; honouring the signal only saves the agent's own work.
   */
  signal: AbortSignal;
}

/** A piece of assistant text; appended to the turn's text. */
export interface AgentDeltaEvent {
  type: 'delta';
  text: string;
  /** The text part it belongs to, when the message has several (docs/protocol.md §2, §9). */
  partId?: string | undefined;
  /** The producer's metadata of this delta (the AI SDK's `providerMetadata`): a JSON object. */
  providerMetadata?: JsonObject | undefined;
}

/** A tool or custom action, logged as an `action` event. `input`/`output`/`error` must be JSON. */
export interface AgentActionEvent {
  type: 'action';
  /** Correlates the `started` and the final event of one call (1–128 characters). */
  callId: string;
  /** 1–128 characters, e.g. `propose_personas`. */
  name: string;
  status: ActionStatus;
  input?: JsonValue;
  output?: JsonValue;
  error?: JsonValue;
}

/**
 * A structured piece of the assistant's message (reasoning, a tool call, a source, app
 * data, an AI SDK chunk), logged as a `part` event. `part` must be a JSON object with a
 * string `type`; the handler refuses anything else (the turn ends `failed`).
 */
export interface AgentPartEvent {
  type: 'part';
  part: PartObject;
}

/** Anything an agent may yield. */
export type AgentEvent = AgentDeltaEvent | AgentActionEvent | AgentPartEvent;

/**
 * The producer of a turn. The handler numbers what it yields, wraps it in
 * `turn.start`/`turn.end`, and keeps pulling whether or not any client is connected.
 * Returning ends the turn `complete`; throwing ends it `failed`.
 *
 * @example
 * const agent: Agent = async function* ({ content }) {
 *   yield { type: 'delta', text: `You said: ${String(content)}` };
 * };
 */
export type Agent = (context: AgentContext) => AsyncIterable<AgentEvent>;
