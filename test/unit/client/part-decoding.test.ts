/** The `part` event (docs/protocol.md 1.1 §2) as the client decodes it from the stream and from storage. */
import { describe, expect, it } from 'vitest';
import { decodeEvent, decodeEventValue } from '../../../src/protocol/decode.js';
import { isProtocolError } from '../../../src/errors.js';
import { turnRecordSchema } from '../../../src/storage/records.js';

const base = { turnId: 'turn_a', seq: 2, type: 'part' };

describe('part events', () => {
  it('decodes a JSON object with a string type, keeping every member', () => {
    const part = { type: 'tool-input-available', toolCallId: 'c1', toolName: 'weather', input: { city: 'Oslo', days: [1, 2] }, dynamic: false };
    expect(decodeEvent(JSON.stringify({ ...base, part }))).toEqual({ kind: 'event', event: { ...base, part } });
  });

  it.each([
    ['no part', {}],
    ['a string part', { part: 'reasoning' }],
    ['an array part', { part: [{ type: 'x' }] }],
    ['a part without type', { part: { text: 'x' } }],
    ['a part with a numeric type', { part: { type: 3 } }],
    ['a part with a non-JSON member', { part: { type: 'x', at: new Date(0) } }],
  ])('refuses %s with a typed protocol error', (_name, extra) => {
    const decoded = decodeEventValue({ ...base, ...extra });
    expect(decoded.kind).toBe('error');
    if (decoded.kind === 'error') {
      expect(isProtocolError(decoded.error)).toBe(true);
      expect(decoded.error.code).toBe('invalid_event');
    }
  });

  it('refuses a part event over the event size limit before parsing it', () => {
    const data = JSON.stringify({ ...base, part: { type: 'data-big', data: 'x'.repeat(2000) } });
    const decoded = decodeEvent(data, { maxEventSize: 1000 });
    expect(decoded).toMatchObject({ kind: 'error', error: { code: 'event_too_large' } });
  });

  it('strips __proto__ and constructor keys anywhere in a part, changing no prototype', () => {
    const data = '{"turnId":"turn_a","seq":2,"type":"part","part":{"type":"data-x","__proto__":{"polluted":1},"data":{"constructor":{"prototype":{"bad":1}},"ok":true}}}';
    const decoded = decodeEvent(data);
    expect(decoded).toEqual({ kind: 'event', event: { ...base, part: { type: 'data-x', data: { ok: true } } } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).bad).toBeUndefined();
  });

  it('keeps a folded turn row with its parts, and skips one whose parts are malformed', () => {
    const row = { id: 'turn_a', conversationId: 'c1', status: 'complete', lastSeq: 4, createdAt: 1, updatedAt: 2, text: 'hi', parts: [{ at: 0, part: { type: 'reasoning', text: 'r' } }, { at: 0 }] };
    expect(turnRecordSchema.safeParse(row)).toMatchObject({ success: true, data: row });
    expect(turnRecordSchema.safeParse({ ...row, parts: [{ at: 0, part: { text: 'no type' } }] }).success).toBe(false);
    expect(turnRecordSchema.safeParse({ ...row, parts: [{ at: -1 }] }).success).toBe(false);
  });
});
