/**
 * Delivery receipts and the operator API (docs/protocol.md sections 10 and 11) over real
 * HTTP, reusable for any TurnLog: `defineDeliverySuite('memory', makeLog)`. A fake clock
 * drives the stuck and undelivered windows (the log and the handler share it).
 */
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { replayAnswerSchema, turnEventSchema } from '../../../src/protocol/schemas.js';
import { operatorEndAnswerSchema, operatorShowAnswerSchema, receiptAnswerSchema } from '../../../src/protocol/server-schemas.js';
import { replayAll, textOf, waitForTurnEnd } from '../../fixtures/server.js';
import { createDeliveryKit, MINUTE, TOKEN, type MakeDeliveryLog, type Setup } from './delivery-kit.js';

export type { DeliveryLog, MakeDeliveryLog } from './delivery-kit.js';

export function defineDeliverySuite(name: string, makeLog: MakeDeliveryLog): void {
  describe(`delivery receipts and the operator API (${name})`, () => {
    const { setup, submit, endedTurn, receipt, operator, list, expectCode } = createDeliveryKit(makeLog);

    it('a turn followed to its end becomes delivered, once, and every turn object says so', async () => {
      const s = await setup();
      const { turnId, end } = await endedTurn(s, 'alice', 'conv-d', 'the whole answer');
      const before = replayAnswerSchema.parse(await (await fetch(`${s.server.baseUrl}/turns/${turnId}`)).json()).turn;
      expect(before.delivery).toEqual({ state: 'pending' });
      const hash = await sha256Hex(textOf((await replayAll(s.server.baseUrl, turnId)).events));
      const first = await receipt(s, 'alice', turnId, { seq: end.seq, textSha256: hash });
      expect(first.status).toBe(200);
      const delivered = receiptAnswerSchema.parse(await first.json()).turn;
      expect(delivered.delivery?.state).toBe('delivered');
      expect(Number.isFinite(Date.parse(delivered.delivery?.at ?? ''))).toBe(true);
      s.clock.advance(5000);
      // Idempotent: the same receipt again (another tab, a retry) keeps the first time.
      const again = receiptAnswerSchema.parse(await (await receipt(s, 'alice', turnId, { seq: end.seq, textSha256: hash })).json()).turn;
      expect(again.delivery).toEqual(delivered.delivery);
      const listed = (await (await fetch(`${s.server.baseUrl}/conversations/conv-d/turns`)).json()) as { turns: { delivery?: unknown }[] };
      expect(listed.turns[0]?.delivery).toEqual(delivered.delivery);
    });

    it('refuses receipts for live turns, wrong seqs and malformed bodies; 404 for another principal', async () => {
      const s = await setup();
      const turnId = await submit(s.server, 'alice', 'conv-r', 'live');
      const control = await s.agent.nextTurn();
      await control.delta('partial');
      const hash = await sha256Hex('partial');
      await expectCode(await receipt(s, 'alice', turnId, { seq: 2, textSha256: hash }), 400, 'turn_not_ended');
      await control.end();
      await waitForTurnEnd(s.server.log, turnId);
      await expectCode(await receipt(s, 'alice', turnId, { seq: 2, textSha256: hash }), 400, 'invalid_receipt');
      await expectCode(await receipt(s, 'alice', turnId, { seq: 3 }), 400, 'invalid_receipt');
      await expectCode(await receipt(s, 'alice', turnId, '{not json'), 400, 'invalid_receipt');
      await expectCode(await receipt(s, 'bob', turnId, { seq: 3, textSha256: hash }), 404, 'turn_not_found');
      await expectCode(await receipt(s, 'alice', 'no-such-turn', { seq: 3, textSha256: hash }), 404, 'turn_not_found');
      // Bob's refused receipt recorded nothing; Alice's own still counts.
      expect(receiptAnswerSchema.parse(await (await receipt(s, 'alice', turnId, { seq: 3, textSha256: hash })).json()).turn.delivery?.state).toBe('delivered');
    });

    it('a tampered receipt is a mismatch, listed as such, until a good receipt proves delivery', async () => {
      const s = await setup();
      const { turnId, end } = await endedTurn(s, 'alice', 'conv-m', 'exact text');
      await expectCode(await receipt(s, 'alice', turnId, { seq: end.seq, textSha256: await sha256Hex('exact texT') }), 409, 'delivery_mismatch');
      const replayed = replayAnswerSchema.parse(await (await fetch(`${s.server.baseUrl}/turns/${turnId}`)).json()).turn;
      expect(replayed.delivery?.state).toBe('mismatch');
      expect((await list(s, 'state=mismatch')).map((turn) => turn.id)).toEqual([turnId]);
      expect(await list(s, 'state=undelivered')).toEqual([]);
      const good = await receipt(s, 'alice', turnId, { seq: end.seq, textSha256: await sha256Hex('exact text') });
      expect(receiptAnswerSchema.parse(await good.json()).turn.delivery?.state).toBe('delivered');
      expect(await list(s, 'state=mismatch')).toEqual([]);
      // Delivered stays delivered.
      await expectCode(await receipt(s, 'alice', turnId, { seq: end.seq, textSha256: await sha256Hex('other') }), 409, 'delivery_mismatch');
      expect((await operatorShow(s, turnId)).turn.delivery?.state).toBe('delivered');
    });

    async function operatorShow(s: Setup, turnId: string) {
      const response = await operator(s, `/turns/${turnId}`);
      expect(response.status).toBe(200);
      return operatorShowAnswerSchema.parse(await response.json());
    }

    it('lists undelivered turns only after the window, newest first, with every filter', async () => {
      const s = await setup();
      const a1 = (await endedTurn(s, 'alice', 'conv-1', 'one')).turnId;
      s.clock.advance(1000);
      const sinceA2 = new Date(Date.now() + 2 * 1000 - 500).toISOString();
      s.clock.advance(1000);
      const a2 = (await endedTurn(s, 'alice', 'conv-2', 'two')).turnId;
      s.clock.advance(1000);
      const b1 = (await endedTurn(s, 'bob', 'conv-1', 'three')).turnId;
      expect(await list(s, 'state=undelivered')).toEqual([]);
      s.clock.advance(MINUTE + 1000);
      const all = await list(s, 'state=undelivered');
      expect(all.map((turn) => turn.id)).toEqual([b1, a2, a1]);
      expect(all.map((turn) => turn.principal)).toEqual(['bob', 'alice', 'alice']);
      expect((await list(s, 'state=undelivered&principal=alice')).map((turn) => turn.id)).toEqual([a2, a1]);
      expect((await list(s, 'state=undelivered&conversation=conv-1')).map((turn) => turn.id)).toEqual([b1, a1]);
      expect((await list(s, 'state=undelivered&conversation=conv-1&principal=alice')).map((turn) => turn.id)).toEqual([a1]);
      expect((await list(s, 'state=undelivered&limit=1')).map((turn) => turn.id)).toEqual([b1]);
      expect((await list(s, `state=undelivered&since=${encodeURIComponent(sinceA2)}`)).map((turn) => turn.id)).toEqual([b1, a2]);
      // A receipt, late as it is, takes the turn off the list.
      const { events } = await replayAll(s.server.baseUrl, a2);
      await receipt(s, 'alice', a2, { seq: events.at(-1)!.seq, textSha256: await sha256Hex(textOf(events)) });
      expect((await list(s, 'state=undelivered')).map((turn) => turn.id)).toEqual([b1, a1]);
      for (const bad of ['', 'state=lost', 'state=live&limit=0', 'state=live&limit=501', 'state=live&since=yesterday', 'state=live&conversation=a.b', 'state=live&extra=1']) {
        await expectCode(await operator(s, `/turns?${bad}`), 400, 'invalid_query');
      }
    });

    it('lists live, stuck and failed turns, shows one with its events', async () => {
      const s = await setup();
      const live = await submit(s.server, 'alice', 'conv-l', 'slow');
      const control = await s.agent.nextTurn();
      await control.delta('thinking');
      const failing = await submit(s.server, 'bob', 'conv-f', 'fail');
      await (await s.agent.nextTurn()).throw(new Error('boom'));
      await waitForTurnEnd(s.server.log, failing);
      expect((await list(s, 'state=live')).map((turn) => turn.id)).toEqual([live]);
      expect(await list(s, 'state=stuck')).toEqual([]);
      expect((await list(s, 'state=failed')).map((turn) => turn.id)).toEqual([failing]);
      s.clock.advance(MINUTE + 1000);
      const stuck = await list(s, 'state=stuck');
      expect(stuck.map((turn) => [turn.id, turn.principal, turn.status])).toEqual([[live, 'alice', 'streaming']]);
      const shown = await operatorShow(s, live);
      expect(shown.turn.principal).toBe('alice');
      expect(shown.events.map((event) => turnEventSchema.parse(event).type)).toEqual(['turn.start', 'delta']);
      await expectCode(await operator(s, '/turns/no-such-turn'), 404, 'turn_not_found');
      await control.end();
    });

    it('ends a stuck turn failed/ended_by_operator, stops its agent, and audits it once', async () => {
      const s = await setup();
      const turnId = await submit(s.server, 'alice', 'conv-e', 'hang');
      const control = await s.agent.nextTurn();
      await control.delta('half an ans');
      await expectCode(await operator(s, `/turns/${turnId}/end`, { method: 'POST', body: '{}' }), 400, 'invalid_body');
      const ended = await operator(s, `/turns/${turnId}/end`, { method: 'POST', body: JSON.stringify({ reason: 'user reported a frozen answer' }) });
      expect(ended.status).toBe(200);
      expect(operatorEndAnswerSchema.parse(await ended.json()).turn.status).toBe('failed');
      expect(control.context.signal.aborted).toBe(true);
      const { events } = await replayAll(s.server.baseUrl, turnId);
      const end = turnEventSchema.parse(events.at(-1));
      expect(end).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'ended_by_operator', message: 'user reported a frozen answer' } });
      expect(end.type === 'turn.end' && end.textSha256).toBe(await sha256Hex('half an ans'));
      expect(s.audits).toEqual([expect.objectContaining({ action: 'end', operator: 'support-1', turnId, principal: 'alice', reason: 'user reported a frozen answer', before: 'streaming', after: 'failed' })]);
      // An ended turn: 200, nothing changes, nothing audited.
      const again = await operator(s, `/turns/${turnId}/end`, { method: 'POST', body: JSON.stringify({ reason: 'twice' }) });
      expect(again.status).toBe(200);
      expect((await replayAll(s.server.baseUrl, turnId)).events).toHaveLength(events.length);
      expect(s.audits).toHaveLength(1);
    });

    it('end on a turn produced by another instance stops it there', async () => {
      const producing = await setup();
      // A second instance over the same store: only the store connects them.
      const other = await setup({ log: { ...producing.store, cleanup: async () => undefined } });
      const turnId = await submit(producing.server, 'alice', 'conv-x', 'far away');
      const control = await producing.agent.nextTurn();
      await control.delta('working');
      const ended = await operator(other, `/turns/${turnId}/end`, { method: 'POST', body: JSON.stringify({ reason: 'stuck on instance A' }) });
      expect(operatorEndAnswerSchema.parse(await ended.json()).turn.status).toBe('failed');
      expect(control.context.signal.aborted).toBe(true);
      const { events } = await replayAll(producing.server.baseUrl, turnId);
      expect(events.filter((event) => event.type === 'turn.end')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ error: { code: 'ended_by_operator' } });
      expect(other.audits.map((entry) => entry.turnId)).toEqual([turnId]);
    });

    it('answers 404 not_found on every operator route while off or refused', async () => {
      const off = await setup({ operator: false });
      const on = await setup();
      const { turnId } = await endedTurn(on, 'alice', 'conv-o', 'secret');
      const probes: [string, RequestInit][] = [
        ['/turns?state=live', {}],
        ['/turns?state=nonsense', {}],
        [`/turns/${turnId}`, {}],
        [`/turns/${turnId}/end`, { method: 'POST', body: JSON.stringify({ reason: 'x' }) }],
        ['/turns', { method: 'DELETE' }],
        ['/nothing/here', {}],
        ['', {}],
      ];
      const refusals: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: '' }];
      for (const [server, headerSets] of [
        [off.server, [{}, { authorization: TOKEN }]],
        [on.server, refusals],
      ] as const) {
        for (const headers of headerSets) {
          for (const [path, init] of probes) {
            await expectCode(await fetch(`${server.baseUrl}/operator${path}`, { ...init, headers: { 'content-type': 'application/json', ...headers } }), 404, 'not_found');
          }
        }
      }
      // Nothing was ended by the refused requests.
      expect((await replayAll(on.server.baseUrl, turnId)).turn.status).toBe('complete');
      expect(on.audits).toEqual([]);
    });

    it("principal B never sees A's turns through a client route", async () => {
      const s = await setup();
      const { turnId, end } = await endedTurn(s, 'alice', 'conv-p', 'private');
      const bob = { 'x-user': 'bob' };
      await expectCode(await fetch(`${s.server.baseUrl}/turns/${turnId}`, { headers: bob }), 404, 'turn_not_found');
      await expectCode(await fetch(`${s.server.baseUrl}/turns/${turnId}/events`, { headers: bob }), 404, 'turn_not_found');
      await expectCode(await fetch(`${s.server.baseUrl}/turns/${turnId}/cancel`, { method: 'POST', headers: bob }), 404, 'turn_not_found');
      await expectCode(await receipt(s, 'bob', turnId, { seq: end.seq, textSha256: await sha256Hex('private') }), 404, 'turn_not_found');
      expect(await (await fetch(`${s.server.baseUrl}/conversations/conv-p/turns`, { headers: bob })).json()).toEqual({ turns: [] });
      // The operator API is no way around it for a principal: it is a separate credential.
      await expectCode(await fetch(`${s.server.baseUrl}/operator/turns?state=undelivered`, { headers: bob }), 404, 'not_found');
    });

    it("the listing's work does not grow with other principals' turns", async (context) => {
      const s = await setup();
      if (!s.store.work) return context.skip();
      for (const text of ['a', 'b', 'c']) await endedTurn(s, 'alice', 'conv-w', text);
      s.clock.advance(MINUTE + 1000);
      const measure = async (query: string): Promise<{ ids: string[]; work: number }> => {
        const before = await s.store.work!();
        const ids = (await list(s, query)).map((turn) => turn.id);
        return { ids, work: (await s.store.work!()) - before };
      };
      const quiet = await measure('state=undelivered&principal=alice');
      expect(quiet.work).toBeGreaterThan(0);
      const quietStuck = await measure('state=stuck&principal=alice');
      // Many more turns of other principals, straight into the log: ended, undelivered, some failed.
      const log = s.store.log;
      const createdAt = new Date(Date.now() + MINUTE + 1000).toISOString();
      const ids = Array.from({ length: 600 }, (_, i) => `other-${i}`);
      for (let i = 0; i < ids.length; i += 50) {
        await Promise.all(
          ids.slice(i, i + 50).map(async (id, j) => {
            await log.createTurn({ id, conversationId: 'conv-w', messageId: `m-${id}`, principal: `user-${(i + j) % 37}`, content: 'x', createdAt });
            await log.append(id, { type: 'turn.start', messageId: `m-${id}`, conversationId: 'conv-w', createdAt });
            await log.append(id, { type: 'turn.end', status: (i + j) % 3 === 0 ? 'failed' : 'complete', textLength: 0, textSha256: await sha256Hex('') });
          }),
        );
      }
      s.clock.advance(MINUTE + 1000);
      const busy = await measure('state=undelivered&principal=alice');
      const busyStuck = await measure('state=stuck&principal=alice');
      expect(busy.ids).toEqual(quiet.ids);
      expect(busy.ids).toHaveLength(3);
      expect(busy.work).toBe(quiet.work);
      expect(busyStuck.work).toBe(quietStuck.work);
    });
  });
}

