/**
 * Benchmark turns: deterministic delta text, the events of a whole turn with the
 * `turn.end` integrity fields, and the turn pre-rendered as an SSE body exactly as
 * docs/protocol.md section 2 frames it, written in fixed-size chunks.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { TurnEvent } from '../../src/protocol/schemas.js';
import type { ThroughputConfig } from '../pages/throughput-types.js';
import { createPrng } from './prng.js';

/** Mostly ASCII words, with accents, CJK and an astral emoji so UTF-8 decoding is exercised. */
const WORDS = ['the', ' quick', ' brown', ' fox', ' jumps', ' over', ' a', ' lazy', ' dog', ',', ' café', ' 漢字', ' 🙂', '.', '\n'];

/** `count` small delta texts (1–8 code units each). */
export function deltaTexts(count: number, seed: number): string[] {
  const prng = createPrng(seed);
  return Array.from({ length: count }, () => prng.pick(WORDS));
}

/** Delta texts of about `bytes` UTF-8 bytes in total, `size` ASCII characters each. */
export function asciiTexts(bytes: number, size: number, seed: number): string[] {
  const prng = createPrng(seed);
  const alphabet = 'abcdefghijklmnopqrstuvwxyz     ';
  const texts: string[] = [];
  for (let total = 0; total < bytes; total += size) {
    let text = '';
    for (let i = 0; i < Math.min(size, bytes - total); i++) text += alphabet[prng.int(0, alphabet.length - 1)];
    texts.push(text);
  }
  return texts;
}

export interface BenchTurn {
  turnId: string;
  conversationId: string;
  messageId: string;
  events: TurnEvent[];
  text: string;
  textSha256: string;
}

/** A whole turn: `turn.start`, one `delta` per text, `turn.end` with length and SHA-256. */
export function makeTurn(turnId: string, texts: readonly string[], createdAt = new Date().toISOString()): BenchTurn {
  const conversationId = `bench-${turnId.slice(0, 8)}`;
  const messageId = `m-${turnId.slice(0, 12)}`;
  const events: TurnEvent[] = [{ turnId, seq: 1, type: 'turn.start', messageId, conversationId, createdAt }];
  for (const text of texts) events.push({ turnId, seq: events.length + 1, type: 'delta', text });
  const text = texts.join('');
  const textSha256 = createHash('sha256').update(text, 'utf8').digest('hex');
  events.push({ turnId, seq: events.length + 1, type: 'turn.end', status: 'complete', textLength: text.length, textSha256 });
  return { turnId, conversationId, messageId, events, text, textSha256 };
}

/** What a throughput or memory page needs to follow `turn` and verify it (served at `/sse` and `/api`). */
export function pageConfig(turn: BenchTurn): ThroughputConfig {
  return {
    sseUrl: '/sse',
    baseUrl: '/api',
    turnId: turn.turnId,
    events: turn.events.length,
    textLength: turn.text.length,
    textSha256: turn.textSha256,
  };
}

/** One SSE message per event: `id` = seq, `event` = type, `data` = the event's JSON. */
export function renderSse(events: readonly TurnEvent[], retryMs = 1000): Buffer {
  const parts = [`retry: ${retryMs}\n\n`];
  for (const event of events) parts.push(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  return Buffer.from(parts.join(''), 'utf8');
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

/**
 * Writes `body` in `chunkSize` slices, honouring back-pressure; with `paceMs` waits that
 * long between slices (a rate-limited producer). Stops quietly when the client leaves.
 */
export async function writeChunked(res: ServerResponse, body: Buffer, chunkSize: number, paceMs = 0): Promise<void> {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  for (let offset = 0; offset < body.length && !res.destroyed; offset += chunkSize) {
    const more = res.write(body.subarray(offset, offset + chunkSize));
    if (!more) await drainOrClose(res);
    if (paceMs > 0) await new Promise((resolve) => setTimeout(resolve, paceMs));
  }
  res.end();
}
