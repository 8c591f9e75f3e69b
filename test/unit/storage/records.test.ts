import { describe, expect, it } from 'vitest';
import { StorageError } from '../../../src/errors.js';
import { checkChunk, checkRecord, ENDED_STATUSES, outboxRecordSchema, turnRecordSchema } from '../../../src/storage/records.js';

const delta = (seq: number, extra: Record<string, unknown> = {}) => ({ turnId: 't1', seq, type: 'delta', text: `w${seq}`, ...extra });

describe('stored record schemas', () => {
  it('accepts a folded row with actions and a stored error, and drops unknown keys', () => {
    const error = new StorageError('storage_quota_exceeded', 'full').toJSON();
    const checked = checkRecord(
      turnRecordSchema,
      {
        id: 't1',
        conversationId: 'c1',
        status: 'failed',
        lastSeq: 4,
        createdAt: 1,
        updatedAt: 2,
        endedAt: 3,
        text: 'hi',
        actions: [{ callId: 'a', name: 'search', status: 'completed', output: { hits: [1] }, seq: 3 }],
        error,
        token: 'Bearer secret',
      },
      'turns',
      't1',
    );
    expect(checked.ok).toBe(true);
    expect(checked.ok && checked.value).not.toHaveProperty('token');
    expect(checked.ok && checked.value.error).toEqual(error);
  });

  it('rejects endedAt on an unfinished turn, and non-finite times', () => {
    const base = { id: 't1', conversationId: 'c1', status: 'streaming', lastSeq: 0, createdAt: 1, updatedAt: 1 };
    expect(turnRecordSchema.safeParse({ ...base, endedAt: 5 }).success).toBe(false);
    expect(turnRecordSchema.safeParse({ ...base, updatedAt: Number.POSITIVE_INFINITY }).success).toBe(false);
    expect(turnRecordSchema.safeParse(base).success).toBe(true);
  });

  it('keeps the user message of a turn (text or JSON object); rows without it still load; other values are refused', () => {
    const base = { id: 't1', conversationId: 'c1', status: 'complete', lastSeq: 2, createdAt: 1, updatedAt: 1, endedAt: 2, text: 'hi' };
    expect(turnRecordSchema.parse({ ...base, content: 'hello' }).content).toBe('hello');
    expect(turnRecordSchema.parse({ ...base, content: { text: 'hello', files: [1, 'a', null] } }).content).toEqual({ text: 'hello', files: [1, 'a', null] });
    expect(turnRecordSchema.parse(base)).not.toHaveProperty('content');
    for (const content of [42, null, ['a'], undefined]) {
      expect(turnRecordSchema.safeParse({ ...base, content }).success).toBe(false);
    }
  });

  it('lists the ended statuses', () => {
    expect([...ENDED_STATUSES].sort()).toEqual(['cancelled', 'complete', 'failed']);
  });

  it('names the store and key of a corrupt record, with the zod issues', () => {
    const checked = checkRecord(outboxRecordSchema, { operationId: 'x'.repeat(300) }, 'outbox', 'x'.repeat(300));
    expect(checked.ok).toBe(false);
    if (checked.ok) return;
    expect(checked.error.code).toBe('storage_corrupt_record');
    expect(checked.error.message).toMatch(/^Skipped a corrupt or foreign record in "outbox" \(key "x+…\)/);
    expect((checked.error.details as { issues: unknown[] }).issues.length).toBeGreaterThan(0);
  });
});

describe('checkChunk', () => {
  it('accepts consecutive events and copies deltas without unknown keys', () => {
    const checked = checkChunk({ turnId: 't1', firstSeq: 2, lastSeq: 3, events: [delta(2, { extra: 1 }), delta(3)] }, ['t1', 2]);
    expect(checked.ok && checked.value.events).toEqual([
      { turnId: 't1', seq: 2, type: 'delta', text: 'w2' },
      { turnId: 't1', seq: 3, type: 'delta', text: 'w3' },
    ]);
  });

  it('validates non-delta events with the protocol schema', () => {
    const action = { turnId: 't1', seq: 1, type: 'action', callId: 'c', name: 'n', status: 'started' };
    expect(checkChunk({ turnId: 't1', firstSeq: 1, lastSeq: 1, events: [action] }, undefined).ok).toBe(true);
    const bad = checkChunk({ turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...action, status: 'exploded' }] }, undefined);
    expect(bad.ok || bad.error.message).toContain('events.0');
  });

  it('rejects wrong turn ids, gaps, miscounts and bad deltas', () => {
    const cases = [
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...delta(1), turnId: 't2' }] },
      { turnId: 't1', firstSeq: 1, lastSeq: 2, events: [delta(1), delta(3)] },
      { turnId: 't1', firstSeq: 1, lastSeq: 3, events: [delta(1), delta(2)] },
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...delta(1), text: null }] },
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [{ ...delta(1), seq: 1.5 }] },
      { turnId: 't1', firstSeq: 1, lastSeq: 1, events: [] },
      { turnId: 'bad id!', firstSeq: 1, lastSeq: 1, events: [delta(1)] },
      'not a chunk',
    ];
    for (const value of cases) {
      const checked = checkChunk(value, ['t1', 1]);
      expect(checked.ok, JSON.stringify(value)).toBe(false);
      expect(checked.ok || checked.error.code).toBe('storage_corrupt_record');
    }
  });
});
