/**
 * Turns shared by several checks, each made once per run on first use: the shape turn
 * (every event type, followed from 0 to its end) and the pause turn (a quiet pause
 * followed live, for heartbeats). Whether the server runs the conformance agent is
 * judged from the shape turn's text.
 */
import { CheckFailure, CheckSkip, clip } from './check.js';
import type { BaseContext } from './context.js';
import { followToEnd, type FollowStream } from './event-stream.js';
import { errorBodyProblem, jsonOf, postJson, type Answer } from './http.js';
import { expectedEvents, pauseScript, scriptContent, shapeScript, type ScriptStep } from './script.js';
import { submitAnswerProblem, textOf, type WireEvent } from './wire.js';

/** A turn this run created. */
export interface SubmittedTurn {
  turnId: string;
  messageId: string;
  conversationId: string;
  /** The content submitted. */
  content: unknown;
  key: string;
  answer: Answer;
}

/** A turn followed from 0 to its end. */
export interface FollowedTurn extends SubmittedTurn {
  stream: FollowStream;
  /** The parsed data of every message with an `id` (messages whose data is not JSON are left out). */
  events: WireEvent[];
}

/** A turn with a quiet pause, followed live from its start. */
export interface PausedTurn extends FollowedTurn {
  /** The heartbeat interval the server announced (or 10 000, the protocol's default, when it did not). */
  heartbeatMs: number;
  pauseMs: number;
}

export interface TurnFixtures {
  /** Submits a message (with a `context`, since 1.2, when given) and expects `202` with a valid answer. */
  submit(conversationId: string, content: unknown, key?: string, requestContext?: Record<string, unknown>): Promise<SubmittedTurn>;
  /** Follows a submitted turn from 0 to its end. */
  follow(turn: SubmittedTurn): Promise<FollowedTurn>;
  /** Submits `steps` as a conformance script and follows the turn to its end. */
  runScript(name: string, steps: ScriptStep[]): Promise<FollowedTurn>;
  /** The shape turn (shared). */
  shape(): Promise<FollowedTurn>;
  /** Skips the running check unless the server runs the conformance agent. */
  requireAgent(): Promise<void>;
  /** The pause turn (shared; needs the agent). */
  pause(): Promise<PausedTurn>;
  /** The announced `Lifeline-Heartbeat` of the shape turn's stream, if any. */
  announcedHeartbeat(): Promise<number | undefined>;
}

/** The parsed events of a stream's messages that carry an `id`. */
export function eventsOf(stream: FollowStream): WireEvent[] {
  const events: WireEvent[] = [];
  for (const { item } of stream.items) {
    if (item.kind !== 'message' || item.id === undefined) continue;
    try {
      events.push(JSON.parse(item.data) as WireEvent);
    } catch {
      // The framing check reports data that is not JSON.
    }
  }
  return events;
}

/** A decimal `Lifeline-Heartbeat` header value, or `undefined`. */
export function heartbeatHeader(headers: Headers): number | undefined {
  const value = headers.get('lifeline-heartbeat');
  return value !== null && /^[0-9]{1,9}$/.test(value) && Number(value) > 0 ? Number(value) : undefined;
}

export function createTurnFixtures(context: BaseContext): TurnFixtures {
  const memo = new Map<string, Promise<unknown>>();
  const once = <T>(name: string, make: () => Promise<T>): Promise<T> => {
    let value = memo.get(name) as Promise<T> | undefined;
    if (value === undefined) {
      value = make();
      // Every check that shares the fixture reports its failure; none is unhandled.
      value.catch(() => undefined);
      memo.set(name, value);
    }
    return value;
  };

  async function submit(conversationId: string, content: unknown, key = context.newKey(), requestContext?: Record<string, unknown>): Promise<SubmittedTurn> {
    const path = `/conversations/${conversationId}/messages`;
    const body = requestContext === undefined ? { content } : { content, context: requestContext };
    const answer = await postJson(context.http, path, body, { 'idempotency-key': key });
    if (answer.status !== 202) {
      const problem = answer.status >= 400 ? errorBodyProblem(answer) : undefined;
      throw new CheckFailure(`POST ${path} answered ${answer.status}, expected 202: ${clip(answer.text)}${problem ? ` (${problem})` : ''}`);
    }
    const accepted = jsonOf(answer);
    const problem = submitAnswerProblem(accepted, conversationId);
    if (problem !== undefined) throw new CheckFailure(`POST ${path} answered 202 with a bad body: ${problem}`);
    const { turnId, messageId } = accepted as { turnId: string; messageId: string };
    return { turnId, messageId, conversationId, content, key, answer };
  }

  async function follow(turn: SubmittedTurn): Promise<FollowedTurn> {
    const stream = await followToEnd(context.http, turn.turnId, {}, context.options.turnTimeoutMs);
    if (stream.status !== 200) throw new CheckFailure(`GET /turns/${turn.turnId}/events answered ${stream.status}, expected 200: ${clip(stream.text)}`);
    return { ...turn, stream, events: eventsOf(stream) };
  }

  async function runScript(name: string, steps: ScriptStep[]): Promise<FollowedTurn> {
    return follow(await submit(context.conversationId(name), scriptContent(steps)));
  }

  const shape = (): Promise<FollowedTurn> => once('shape', () => runScript('shape', shapeScript(context.options.runId)));

  async function requireAgent(): Promise<void> {
    const turn = await shape();
    const expected = textOf(expectedEvents(shapeScript(context.options.runId)).events as WireEvent[]);
    const actual = textOf(turn.events);
    if (actual !== expected) {
      throw new CheckSkip(
        `needs the conformance agent (docs/conformance.md): a lifelineConformance message produced the text ${JSON.stringify(clip(actual, 60))}, not the scripted one`,
      );
    }
  }

  async function announcedHeartbeat(): Promise<number | undefined> {
    return heartbeatHeader((await shape()).stream.headers);
  }

  const pause = (): Promise<PausedTurn> =>
    once('pause', async () => {
      await requireAgent();
      const heartbeatMs = (await announcedHeartbeat()) ?? 10_000;
      const pauseMs = context.options.pauseMs ?? Math.round(heartbeatMs * 2.5);
      const turn = await submit(context.conversationId('pause'), scriptContent(pauseScript(pauseMs)));
      const stream = await followToEnd(context.http, turn.turnId, {}, pauseMs + context.options.turnTimeoutMs);
      if (stream.status !== 200) throw new CheckFailure(`GET /turns/${turn.turnId}/events answered ${stream.status}, expected 200`);
      return { ...turn, stream, events: eventsOf(stream), heartbeatMs, pauseMs };
    });

  return { submit, follow, runScript, shape, requireAgent, pause, announcedHeartbeat };
}
