/** Section 2: heartbeats, the Lifeline-Heartbeat header, and a live stream that never falls silent. */
import { CheckFailure, expect, expectJsonEqual } from '../check.js';
import type { Check } from '../run-context.js';
import { heartbeatHeader } from '../fixtures.js';
import { expectedEvents, pauseScript } from '../script.js';
import { framingProblem, expectWholeTurn } from './stream.js';

const header: Check = {
  id: 's2.heartbeat-header',
  title: 'a 200 follow answer carries Lifeline-Heartbeat: <ms>',
  rule: '§2 "Since 1.1 the 200 answer carries the header Lifeline-Heartbeat: <ms> with that interval"',
  async run(context) {
    const turn = await context.turns.shape();
    const raw = turn.stream.headers.get('lifeline-heartbeat');
    const value = heartbeatHeader(turn.stream.headers);
    expect(value !== undefined, raw === null ? 'no Lifeline-Heartbeat header' : `Lifeline-Heartbeat ${JSON.stringify(raw)} is not a positive integer of ms`);
    return `Lifeline-Heartbeat: ${value}`;
  },
};

const heartbeats: Check = {
  id: 's2.heartbeats',
  title: 'a quiet pause of a live turn is filled with heartbeats: event: heartbeat, data: {}, no id line',
  rule: '§2 "the server sends event: heartbeat with data: {} and no id line. They carry no seq and are never logged"',
  async run(context) {
    const turn = await context.turns.pause();
    const beats = turn.stream.items.flatMap(({ item }) => (item.kind === 'message' && item.event === 'heartbeat' ? [item] : []));
    expect(beats.length > 0, `no heartbeat during a pause of ${turn.pauseMs} ms (announced interval ${turn.heartbeatMs} ms)`);
    for (const beat of beats) {
      expect(beat.id === undefined, `a heartbeat carries an id line (id: ${JSON.stringify(beat.id)})`);
      let data: unknown;
      try {
        data = JSON.parse(beat.data);
      } catch {
        throw new CheckFailure(`a heartbeat's data ${JSON.stringify(beat.data)} is not JSON`);
      }
      expectJsonEqual(data, {}, 'a heartbeat\'s data');
    }
    expect(!turn.events.some((event) => (event.type as string) === 'heartbeat'), 'a heartbeat was sent as a numbered event');
    return `${beats.length} heartbeats in ${turn.pauseMs} ms`;
  },
};

const liveness: Check = {
  id: 's2.liveness',
  title: 'a live stream is never silent longer than the announced heartbeat interval plus slack',
  rule: '§2 "while a turn is live and nothing else was sent for heartbeat ms … the server sends event: heartbeat"',
  async run(context) {
    const turn = await context.turns.pause();
    const slack = context.options.slackMs ?? Math.max(1000, turn.heartbeatMs);
    const times = [turn.stream.headersAt, ...turn.stream.chunkTimes];
    let longest = 0;
    for (let i = 1; i < times.length; i++) longest = Math.max(longest, (times[i] ?? 0) - (times[i - 1] ?? 0));
    const bound = turn.heartbeatMs + slack;
    expect(longest <= bound, `a silence of ${Math.round(longest)} ms, longer than the interval ${turn.heartbeatMs} ms + slack ${slack} ms`);
    return `longest silence ${Math.round(longest)} ms (bound ${bound} ms)`;
  },
};

const liveStream: Check = {
  id: 's2.live-stream',
  title: 'a turn followed while live gets every event in order, framed, then the end',
  rule: '§2 "then live events as they are produced, then closes after turn.end"',
  async run(context) {
    const turn = await context.turns.pause();
    const problem = framingProblem(turn.stream, turn.turnId);
    if (problem !== undefined) throw new CheckFailure(problem);
    expectWholeTurn(turn.events, 'the live stream');
    const middle = turn.events.slice(1, -1).map(({ turnId: _turnId, seq: _seq, ...rest }) => rest);
    expectJsonEqual(middle, expectedEvents(pauseScript(turn.pauseMs)).events, 'the live events');
    return `${turn.events.length} events live`;
  },
};

export const heartbeatChecks: readonly Check[] = [header, heartbeats, liveness, liveStream];
