/**
 * docs/architecture.md shows the client's state machines as generated from their tables in
 * `src/`: this fails when the doc differs from the code (run `npm run docs:tables`).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderInto, sections } from '../../../scripts/machine-tables.js';
import { GUARD_TABLE, guardStep } from '../../../src/storage/guarded-store.js';
import { BUFFER_TABLE, bufferStep, timed, writes, type BufferPhase } from '../../../src/storage/write-buffer.js';

const doc = readFileSync(new URL('../../../docs/architecture.md', import.meta.url), 'utf8');

describe('the generated machine tables in docs/architecture.md', () => {
  it('match the tables in the code (npm run docs:tables rewrites them)', () => {
    expect(renderInto(doc), 'docs/architecture.md is stale: run `npm run docs:tables`').toBe(doc);
  });

  it('a hand edit inside a generated section is caught', () => {
    const [first] = sections();
    const begin = `<!-- generated:${first!.name} -->`;
    const edited = doc.replace(begin, `${begin}\n| a row written by hand |`);
    expect(renderInto(edited)).not.toBe(edited);
    expect(renderInto(edited)).toBe(doc);
  });

  it('names the follower phase every input may lead to, in every phase', () => {
    const follower = sections().find((section) => section.name === 'follower')!.markdown;
    // One header, one rule, one row per input; each row has a cell per phase.
    const rows = follower.split('\n').slice(2);
    for (const row of rows) expect(row.split('|').length).toBe(follower.split('\n')[0]!.split('|').length);
    expect(follower).toContain('| opened | · | · | · | `streaming` |');
  });

  it('the storage guard moves only where its table says, and degrades once', () => {
    for (const state of Object.keys(GUARD_TABLE) as (keyof typeof GUARD_TABLE)[]) {
      for (const event of ['opened', 'failed'] as const) {
        for (const memoryByChoice of [false, true]) {
          const next = guardStep(state, event, memoryByChoice);
          if (next === undefined) expect(GUARD_TABLE[state][event]).toBeUndefined();
          else expect(GUARD_TABLE[state][event]).toContain(next);
        }
      }
    }
    expect(guardStep('degraded', 'failed', false)).toBeUndefined();
    expect(guardStep('opening', 'opened', true)).toBe('memory');
  });

  it('the write buffer: a timer runs where the phase says, a full flush never waits for it, one write at a time', () => {
    const phases = Object.keys(BUFFER_TABLE) as BufferPhase[];
    for (const phase of phases) {
      for (const backlog of [0, 1, 2] as const) {
        // The rows agree with what the phases' names say: a timer runs in every `…scheduled` one, a write in `writing…` and `draining…`.
        expect(timed(phase)).toBe(phase.endsWith('scheduled'));
        expect(writes(phase)).toBe(/^(writing|draining)/.test(phase));
        // A full flush buffered never waits for the timer.
        const next = bufferStep(phase, 'event', 2);
        if (next) expect(writes(next)).toBe(true);
      }
    }
    // Only the loop's own end leaves writing for good: an event or a flush during a write never starts another.
    for (const phase of phases.filter(writes)) for (const input of ['event', 'flush', 'timer'] as const) expect(writes(bufferStep(phase, input, 1) ?? phase)).toBe(true);
    expect(bufferStep('writing', 'written', 1)).toBe('scheduled');
    expect(bufferStep('draining', 'written', 1)).toBe('draining');
    expect(bufferStep('stopped', 'event', 1)).toBeUndefined();
  });
});
