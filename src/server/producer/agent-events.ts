/**
 * What an untrusted agent yields, checked before it reaches the log: each event's shape and
 * size, and the turn's running totals against its caps. Anything out of bounds becomes a
 * `TurnFailure`, which ends the turn `failed` with a stable code instead of a bad event.
 */
import { actionEventSchema, deltaEventSchema, partEventSchema, type DeltaEvent } from '../../protocol/schemas.js';
import type { AgentDeltaEvent, AgentEvent } from './agent.js';
import type { NewTurnEvent } from '../log/turn-log.js';

/** Per-turn caps; a turn that would exceed one ends `failed` with code `turn_too_large`. */
export interface ProducerLimits {
  maxEventsPerTurn: number;
  maxTextPerTurn: number;
  maxEventSize: number;
}

/** A failure that ends the turn `failed` with this error object on `turn.end`. */
export class TurnFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** What a turn has logged so far: counted against its caps, and hashed into its `turn.end`. */
export interface LoggedSoFar {
  /** Events in the log, `turn.start` included. */
  events: number;
  /** The deltas' texts, in order. */
  texts: string[];
  textLength: number;
}

/** JSON-escaped length is at most 6× the raw length; only long texts need the exact count. */
function deltaDataSize(text: string, cap: number): number {
  const overhead = 80;
  return text.length * 6 + overhead <= cap ? text.length + overhead : JSON.stringify(text).length + overhead;
}

/** A delta as logged: its text, and the part id and metadata when given (checked like a part). */
function toLogDelta(event: AgentDeltaEvent, limits: ProducerLimits): NewTurnEvent {
  const { text, partId, providerMetadata } = event;
  if (typeof text !== 'string') throw new TurnFailure('invalid_agent_event', 'A delta must carry a string `text`.');
  if (partId !== undefined && typeof partId !== 'string') throw new TurnFailure('invalid_agent_event', 'A delta\'s `partId` must be a string.');
  const delta: Omit<DeltaEvent, 'turnId' | 'seq'> = { type: 'delta', text, ...(partId !== undefined && { partId }) };
  if (providerMetadata !== undefined) {
    const checked = deltaEventSchema.shape.providerMetadata.safeParse(providerMetadata);
    if (!checked.success || checked.data === undefined) throw new TurnFailure('invalid_agent_event', 'A delta\'s `providerMetadata` must be a JSON object.');
    delta.providerMetadata = checked.data;
  }
  // The overhead of deltaDataSize covers the `partId` member's name; metadata is measured.
  const size = delta.providerMetadata === undefined ? deltaDataSize(text + (partId ?? ''), limits.maxEventSize) : JSON.stringify(delta).length + 80;
  if (size > limits.maxEventSize) throw new TurnFailure('turn_too_large', `A delta exceeds the event size limit of ${limits.maxEventSize}.`);
  return delta;
}

/** Validates what an untrusted agent yielded and turns it into a loggable event. */
export function toLogEvent(event: AgentEvent, limits: ProducerLimits): NewTurnEvent {
  if (typeof event !== 'object' || event === null) throw new TurnFailure('invalid_agent_event', 'The agent yielded a non-object.');
  if (event.type === 'delta') return toLogDelta(event, limits);
  if (event.type === 'action') {
    const action: NewTurnEvent = {
      type: 'action',
      callId: event.callId,
      name: event.name,
      status: event.status,
      ...(event.input === undefined ? {} : { input: event.input }),
      ...(event.output === undefined ? {} : { output: event.output }),
      ...(event.error === undefined ? {} : { error: event.error }),
    };
    const checked = actionEventSchema.safeParse({ turnId: 'x', seq: 1, ...action });
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new TurnFailure('invalid_agent_event', `Invalid action event: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'bad shape'}.`);
    }
    if (JSON.stringify(action).length + 80 > limits.maxEventSize) {
      throw new TurnFailure('turn_too_large', `An action exceeds the event size limit of ${limits.maxEventSize}.`);
    }
    return action;
  }
  if (event.type === 'part') {
    const checked = partEventSchema.safeParse({ turnId: 'x', seq: 1, type: 'part', part: event.part });
    if (!checked.success) throw new TurnFailure('invalid_agent_event', 'A part must be a JSON object with a string `type`.');
    if (JSON.stringify(event.part).length + 80 > limits.maxEventSize) {
      throw new TurnFailure('turn_too_large', `A part exceeds the event size limit of ${limits.maxEventSize}.`);
    }
    return { type: 'part', part: checked.data.part };
  }
  throw new TurnFailure('invalid_agent_event', `Unknown agent event type ${JSON.stringify((event as { type?: unknown }).type)}.`);
}

/** Throws when logging `event` would take the turn past a cap. */
export function checkTurnLimits(event: NewTurnEvent, logged: LoggedSoFar, limits: ProducerLimits): void {
  if (event.type === 'delta' && logged.textLength + event.text.length > limits.maxTextPerTurn) {
    throw new TurnFailure('turn_too_large', `The turn's text exceeds the limit of ${limits.maxTextPerTurn} code units.`);
  }
  // One slot stays free for turn.end.
  if (logged.events + 2 > limits.maxEventsPerTurn) {
    throw new TurnFailure('turn_too_large', `The turn exceeds the limit of ${limits.maxEventsPerTurn} events.`);
  }
}

/** Counts `event` as logged. */
export function countLogged(event: NewTurnEvent, logged: LoggedSoFar): void {
  logged.events++;
  if (event.type === 'delta') {
    logged.texts.push(event.text);
    logged.textLength += event.text.length;
  }
}
