/**
 * Two tabs of one origin write the same turn into one real Chromium database: the tab
 * that sees the end folds it while the other is still appending (the soak's "hole in the
 * stored events: seq 1 to 262 missing"). Whatever order the writes land in, the fold
 * stays and nothing loads with a hole.
 */
import { expect, test } from '@playwright/test';
import { startPageServer, type PageServer } from '../fixtures/page-server.js';
import { allFailures, openPage, watchFailures } from './helpers.js';

let server: PageServer;

test.beforeAll(async () => {
  server = await startPageServer((_req, res) => res.writeHead(404).end());
});

test.afterAll(async () => {
  await server.close();
});

test('a fold in one tab wins over the other tab\'s late and racing appends; chunks of different cuts leave no hole', async ({ context }) => {
  const tabA = await context.newPage();
  const tabB = await context.newPage();
  const failures = [watchFailures(tabA), watchFailures(tabB)];
  await openPage(tabA, server.url);
  await openPage(tabB, server.url);
  const text = (to: number) => Array.from({ length: to }, (_, i) => `w${i + 1} `).join('');

  // Both tabs follow the turn from seq 1 and cut their flushes differently; B's shorter first chunk lands last.
  await tabA.evaluate(async () => {
    const { row, chunk } = window.__fixtures;
    const store = window.lifeline.createIndexedDbStore({ namespace: 'tabs' });
    window.__test['store'] = store;
    await store.write([{ record: row('t1', { lastSeq: 9 }), chunk: chunk('t1', 1, 9) }]);
    await store.write([{ record: row('t1', { lastSeq: 262 }), chunk: chunk('t1', 10, 262) }]);
  });
  await tabB.evaluate(async () => {
    const { row, chunk } = window.__fixtures;
    const store = window.lifeline.createIndexedDbStore({ namespace: 'tabs' });
    window.__test['store'] = store;
    await store.write([{ record: row('t1', { lastSeq: 5 }), chunk: chunk('t1', 1, 5) }]);
  });
  const beforeFold = await tabB.evaluate(async () => {
    const loaded = await (window.__test['store'] as ReturnType<typeof window.lifeline.createIndexedDbStore>).loadTurn('t1');
    return { lastSeq: loaded?.record.lastSeq, events: loaded?.events.length, skipped: loaded?.skipped?.length ?? 0 };
  });
  expect(beforeFold).toEqual({ lastSeq: 262, events: 262, skipped: 0 });

  // A folds while B keeps appending: one append racing the fold, one landing after it.
  const fold = tabA.evaluate(
    async (folded) => {
      const store = window.__test['store'] as ReturnType<typeof window.lifeline.createIndexedDbStore>;
      await store.write([{ record: window.__fixtures.row('t1', { status: 'complete', lastSeq: 300, text: folded, actions: [], endedAt: 9_000 }) }]);
    },
    text(300),
  );
  const racing = tabB.evaluate(async () => {
    const { row, chunk } = window.__fixtures;
    const store = window.__test['store'] as ReturnType<typeof window.lifeline.createIndexedDbStore>;
    await store.write([{ record: row('t1', { lastSeq: 280 }), chunk: chunk('t1', 263, 280) }]);
  });
  await Promise.all([fold, racing]);
  const after = await tabB.evaluate(async () => {
    const { row, chunk } = window.__fixtures;
    const store = window.__test['store'] as ReturnType<typeof window.lifeline.createIndexedDbStore>;
    await store.write([{ record: row('t1', { lastSeq: 300 }), chunk: chunk('t1', 281, 300) }]);
    await store.write([{ record: row('t1', { lastSeq: 300, status: 'reconnecting' }) }]);
    const loaded = await store.loadTurn('t1');
    const unfinished = await store.loadTurns({ unfinished: true });
    return { record: loaded?.record, events: loaded?.events.length, skipped: loaded?.skipped?.length ?? 0, unfinished: unfinished.items.length };
  });
  expect(after).toMatchObject({ record: { status: 'complete', lastSeq: 300, text: text(300) }, events: 0, skipped: 0, unfinished: 0 });
  for (const [index, page] of [tabA, tabB].entries()) expect(await allFailures(page, failures[index] ?? [])).toEqual([]);
});
