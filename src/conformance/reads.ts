/**
 * The JSON reads several checks lean on, validated as they are read: a conversation's
 * turns (section 4) and a turn's replay pages (section 3).
 */
import { CheckFailure, expect } from './check.js';
import type { RunContext } from './run-context.js';
import { expectContentType, expectStatus, jsonOf, request } from './http.js';
import { eventProblem, turnObjectProblem, type WireEvent } from './wire.js';

/** A turn object as sent in replay, list and cancel answers. */
export interface WireTurn {
  id: string;
  conversationId: string;
  messageId: string;
  status: string;
  lastSeq: number;
  createdAt: string;
  updatedAt: string;
  content?: unknown;
  [field: string]: unknown;
}

export interface ReplayPage {
  turn: WireTurn;
  events: WireEvent[];
  hasMore: boolean;
}

/** Fails unless `value` is a valid turn object; returns it typed. */
export function expectTurnObject(value: unknown, where: string): WireTurn {
  const problem = turnObjectProblem(value);
  if (problem !== undefined) throw new CheckFailure(`${where}: ${problem}`);
  return value as WireTurn;
}

/** `GET /conversations/{id}/turns[?limit=]`, checked: 200, JSON, `{"turns": [turn objects]}`. */
export async function listTurns(context: RunContext, conversationId: string, limit?: string): Promise<WireTurn[]> {
  const path = `/conversations/${conversationId}/turns${limit === undefined ? '' : `?limit=${limit}`}`;
  const answer = await request(context.http, 'GET', path);
  expectStatus(answer, 200);
  expectContentType(answer, 'application/json');
  const body = jsonOf(answer) as { turns?: unknown };
  expect(Array.isArray(body?.turns), `GET ${path}: the body has no "turns" array`);
  return (body.turns as unknown[]).map((turn, index) => expectTurnObject(turn, `GET ${path} turns[${index}]`));
}

/** `GET /turns/{id}?…` for one page, checked: 200, JSON, turn object, valid events, boolean hasMore. */
export async function replayPage(context: RunContext, turnId: string, query: string): Promise<ReplayPage> {
  const path = `/turns/${turnId}${query}`;
  const answer = await request(context.http, 'GET', path);
  expectStatus(answer, 200);
  expectContentType(answer, 'application/json');
  const body = jsonOf(answer) as { turn?: unknown; events?: unknown; hasMore?: unknown };
  const turn = expectTurnObject(body?.turn, `GET ${path} turn`);
  expect(Array.isArray(body.events), `GET ${path}: the body has no "events" array`);
  expect(typeof body.hasMore === 'boolean', `GET ${path}: hasMore is ${JSON.stringify(body.hasMore)}, not a boolean`);
  const events = body.events as unknown[];
  events.forEach((event, index) => {
    const problem = eventProblem(event, turnId);
    if (problem !== undefined) throw new CheckFailure(`GET ${path} events[${index}]: ${problem}`);
  });
  return { turn, events: events as WireEvent[], hasMore: body.hasMore as boolean };
}

/** Every event after 0, following `hasMore` with `limit` per page (bounded by `maxPages`). */
export async function replayAll(context: RunContext, turnId: string, limit: number, maxPages = 10_000): Promise<{ pages: ReplayPage[]; events: WireEvent[] }> {
  const pages: ReplayPage[] = [];
  const events: WireEvent[] = [];
  let after = 0;
  for (let page = 0; page < maxPages; page++) {
    const answer = await replayPage(context, turnId, `?after=${after}&limit=${limit}`);
    pages.push(answer);
    events.push(...answer.events);
    const last = answer.events.at(-1);
    if (!answer.hasMore) return { pages, events };
    expect(last !== undefined, `GET /turns/${turnId}?after=${after}&limit=${limit} returned no event but hasMore true`);
    expect(last.seq > after, `GET /turns/${turnId}?after=${after} returned seq ${last.seq}, not after ${after}`);
    after = last.seq;
  }
  throw new CheckFailure(`replay of ${turnId} did not finish within ${maxPages} pages`);
}
