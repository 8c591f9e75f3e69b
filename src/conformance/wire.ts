/**
 * The field rules of docs/protocol.md 1.2 for the objects a server sends, written out here
 * (not borrowed from the client's schemas) so the suite is an independent reading of
 * the page. Each validator answers the first problem found, or `undefined`.
 */

/** An event as it appears in a `data:` line and in replay answers. */
export interface WireEvent {
  turnId: string;
  seq: number;
  type: string;
  [field: string]: unknown;
}

export const ID = /^[A-Za-z0-9_-]{1,128}$/;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
const TURN_STATUSES = ['pending', 'streaming', 'complete', 'failed', 'cancelled'];
const END_STATUSES = ['complete', 'failed', 'cancelled'];
const ACTION_STATUSES = ['started', 'completed', 'failed'];
/** The event types of protocol 1.1. */
export const EVENT_TYPES = ['turn.start', 'delta', 'action', 'part', 'turn.end'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
const isTimestamp = (value: unknown): boolean => typeof value === 'string' && ISO_8601.test(value) && !Number.isNaN(Date.parse(value));
const isName = (value: unknown): boolean => typeof value === 'string' && value.length >= 1 && value.length <= 128;

/** Problems of one type's own fields. */
function typeProblem(event: Record<string, unknown>): string | undefined {
  switch (event['type']) {
    case 'turn.start':
      if (event['seq'] !== 1) return 'turn.start must be seq 1';
      if (typeof event['messageId'] !== 'string' || !ID.test(event['messageId'])) return 'turn.start needs a messageId id';
      if (typeof event['conversationId'] !== 'string' || !ID.test(event['conversationId'])) return 'turn.start needs a conversationId id';
      if (!isTimestamp(event['createdAt'])) return `turn.start createdAt is not ISO 8601: ${JSON.stringify(event['createdAt'])}`;
      return undefined;
    case 'delta':
      if (typeof event['text'] !== 'string') return 'delta needs a string text';
      if (event['partId'] !== undefined && typeof event['partId'] !== 'string') return 'delta partId (1.2) must be a string';
      if (event['providerMetadata'] !== undefined && !isObject(event['providerMetadata'])) return 'delta providerMetadata (1.2) must be a JSON object';
      return undefined;
    case 'action':
      if (!isName(event['callId'])) return 'action needs a callId of 1–128 characters';
      if (!isName(event['name'])) return 'action needs a name of 1–128 characters';
      if (!ACTION_STATUSES.includes(event['status'] as string)) return `action status ${JSON.stringify(event['status'])} is not started/completed/failed`;
      return undefined;
    case 'part': {
      const part = event['part'];
      if (!isObject(part)) return 'part needs a JSON object "part"';
      return typeof part['type'] === 'string' ? undefined : 'part.part needs a string member "type"';
    }
    case 'turn.end':
      if (!END_STATUSES.includes(event['status'] as string)) return `turn.end status ${JSON.stringify(event['status'])} is not complete/failed/cancelled`;
      if (!isCount(event['textLength'])) return 'turn.end needs an integer textLength ≥ 0';
      if (typeof event['textSha256'] !== 'string' || !SHA256_HEX.test(event['textSha256'])) return 'turn.end textSha256 must be 64 lowercase hex digits';
      return undefined;
    default:
      return `type ${JSON.stringify(event['type'])} is not an event type of protocol 1.1`;
  }
}

/** The problem of an event object belonging to `turnId`, or `undefined`. */
export function eventProblem(value: unknown, turnId: string): string | undefined {
  if (!isObject(value)) return 'the event is not a JSON object';
  if (value['turnId'] !== turnId) return `turnId is ${JSON.stringify(value['turnId'])}, expected ${turnId}`;
  if (!Number.isSafeInteger(value['seq']) || (value['seq'] as number) < 1) return `seq ${JSON.stringify(value['seq'])} is not an integer ≥ 1`;
  if (typeof value['type'] !== 'string') return 'type is not a string';
  return typeProblem(value);
}

/** The problem of a turn object (sections 3–5), or `undefined`. */
export function turnObjectProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'the turn is not a JSON object';
  for (const field of ['id', 'conversationId', 'messageId'] as const) {
    if (typeof value[field] !== 'string' || !ID.test(value[field])) return `turn ${field} is not an id: ${JSON.stringify(value[field])}`;
  }
  if (!TURN_STATUSES.includes(value['status'] as string)) return `turn status ${JSON.stringify(value['status'])} is not one of ${TURN_STATUSES.join('/')}`;
  if (!isCount(value['lastSeq'])) return `turn lastSeq ${JSON.stringify(value['lastSeq'])} is not an integer ≥ 0`;
  if (!isTimestamp(value['createdAt'])) return `turn createdAt is not ISO 8601: ${JSON.stringify(value['createdAt'])}`;
  if (!isTimestamp(value['updatedAt'])) return `turn updatedAt is not ISO 8601: ${JSON.stringify(value['updatedAt'])}`;
  if (value['continues'] !== undefined && (typeof value['continues'] !== 'string' || !ID.test(value['continues']))) return `turn continues (1.2) is not an id: ${JSON.stringify(value['continues'])}`;
  return undefined;
}

/** The problem of a submit answer (section 1), or `undefined`. */
export function submitAnswerProblem(value: unknown, conversationId: string): string | undefined {
  if (!isObject(value)) return 'the answer is not a JSON object';
  for (const field of ['turnId', 'messageId'] as const) {
    if (typeof value[field] !== 'string' || !ID.test(value[field])) return `${field} is not an id: ${JSON.stringify(value[field])}`;
  }
  if (value['conversationId'] !== conversationId) return `conversationId is ${JSON.stringify(value['conversationId'])}, expected ${conversationId}`;
  if (value['status'] !== 'pending') return `status is ${JSON.stringify(value['status'])}, expected "pending"`;
  return undefined;
}

/** The assistant text of a list of events: the concatenated delta texts. */
export function textOf(events: readonly WireEvent[]): string {
  let text = '';
  for (const event of events) if (event.type === 'delta' && typeof event['text'] === 'string') text += event['text'];
  return text;
}
