/**
 * Protocol 1.2 on the submit route: a submission's `context` (section 1) and continuation
 * turns (section 9). Both need the conformance agent (its `echoContext` step shows what the
 * agent was handed); a server whose agent does not know that step predates 1.2 and is
 * skipped with that reason, never passed.
 */
import { CheckFailure, CheckSkip, expect, expectJsonEqual } from '../check.js';
import type { Check, RunContext } from '../run-context.js';
import type { FollowedTurn } from '../fixtures.js';
import { expectStatus, postJson } from '../http.js';
import { listTurns, replayPage } from '../reads.js';
import { CONTEXT_PART, scriptContent, type ScriptStep } from '../script.js';

/** The protocol's bound on a context: 16 KiB of UTF-8 JSON. */
const MAX_CONTEXT_BYTES = 16 * 1024;

/** The context the agent was handed, as the turn's `echoContext` part shows it; skips a server that predates 1.2. */
function echoedContext(turn: FollowedTurn): unknown {
  const part = turn.events.find((event) => event.type === 'part' && (event['part'] as { type?: unknown } | undefined)?.type === CONTEXT_PART);
  if (part !== undefined) return (part['part'] as { data?: unknown }).data;
  const end = turn.events.find((event) => event.type === 'turn.end');
  if (end?.['status'] === 'failed') throw new CheckSkip('the conformance agent does not know the echoContext step: the server predates protocol 1.2');
  throw new CheckFailure(`turn ${turn.turnId} ran an echoContext step but logged no ${CONTEXT_PART} part`);
}

/** Submits `steps` with `requestContext` and follows the turn to its end. */
async function runWith(context: RunContext, conversationId: string, steps: ScriptStep[], requestContext?: Record<string, unknown>, key?: string): Promise<FollowedTurn> {
  return context.turns.follow(await context.turns.submit(conversationId, scriptContent(steps), key, requestContext));
}

const contextRoundTrip: Check = {
  id: 's1.context',
  title: 'a submission’s context (1.2) reaches the agent for that submission only and counts in the idempotency fingerprint; over 16 KiB answers 413',
  rule: '§1 "context (since 1.2, at most 16 KiB) … the server hands it to the agent with this submission only, stores it with the turn, and counts it in the idempotency fingerprint"',
  async run(context) {
    await context.turns.requireAgent();
    const conversationId = context.conversationId('context');
    const sent = { body: { model: 'conformance', n: 1 }, metadata: { runId: context.options.runId, text: 'naïve 日本語 😀', list: [1, null, true] } };
    const steps: ScriptStep[] = [{ echoContext: true }, { delta: 'context' }];
    const turn = await runWith(context, conversationId, steps, sent);
    expectJsonEqual(echoedContext(turn), sent, 'the context the agent was handed');

    const path = `/conversations/${conversationId}/messages`;
    const again = await postJson(context.http, path, { content: scriptContent(steps), context: sent }, { 'idempotency-key': turn.key });
    expectStatus(again, 200);
    const other = await postJson(context.http, path, { content: scriptContent(steps), context: { ...sent, body: { model: 'other' } } }, { 'idempotency-key': turn.key });
    expect(other.status === 422, `the same key with another context answered ${other.status}, expected 422 idempotency_key_reused: context counts in the fingerprint`);

    const next = await runWith(context, conversationId, steps);
    expectJsonEqual(echoedContext(next), null, 'the context of the next submission, sent without one');

    const large = await postJson(context.http, path, { content: 'too much context', context: { pad: 'x'.repeat(MAX_CONTEXT_BYTES) } }, { 'idempotency-key': context.newKey() });
    expect(large.status === 413, `a context over 16 KiB answered ${large.status}, expected 413`);
    const turns = await listTurns(context, conversationId);
    expect(turns.length === 2, `the conversation lists ${turns.length} turns, expected 2 (the replay, the 422 and the 413 made none)`);
    return `context handed to turn ${turn.turnId} only; 200 on replay, 422 for another context, 413 over 16 KiB`;
  },
};

const continues: Check = {
  id: 's9.continues',
  title: 'an assistant UIMessage as content starts a continuation turn; its turn object says continues: <that message id> (1.2)',
  rule: '§9 "Turn objects of a continuation carry "continues": "<id of the continued assistant message>""',
  async run(context) {
    await context.turns.requireAgent();
    const conversationId = context.conversationId('continues');
    const asked = await runWith(context, conversationId, [{ delta: 'waiting for a tool' }]);
    // The assistant message the first turn produced: under the AI SDK mapping its id is the turn id.
    const message = { id: asked.turnId, role: 'assistant', parts: [{ type: 'text', text: 'waiting for a tool' }] };
    const continuation = await context.turns.follow(await context.turns.submit(conversationId, { ...message, ...scriptContent([{ echoContext: true }, { delta: ' continued' }]) }));
    echoedContext(continuation);
    const replayed = (await replayPage(context, continuation.turnId, '?after=0')).turn;
    expect(replayed['continues'] === asked.turnId, `the continuation's turn object has continues ${JSON.stringify(replayed['continues'])}, expected ${JSON.stringify(asked.turnId)}`);
    const listed = await listTurns(context, conversationId);
    const byId = new Map(listed.map((turn) => [turn.id, turn['continues']]));
    expect(byId.get(continuation.turnId) === asked.turnId, `the list's continuation turn has continues ${JSON.stringify(byId.get(continuation.turnId))}, expected ${JSON.stringify(asked.turnId)}`);
    expect(byId.has(asked.turnId) && byId.get(asked.turnId) === undefined, `the list's first turn has continues ${JSON.stringify(byId.get(asked.turnId))}: only continuations carry it`);
    return `turn ${continuation.turnId} continues ${asked.turnId}`;
  },
};

export const contextChecks: readonly Check[] = [contextRoundTrip];
export const continuationChecks: readonly Check[] = [continues];
