/**
 * The IndexedDB store in real Chromium, through the built package: the failures
 * fake-indexeddb cannot produce (a real quota, Clear-Site-Data, a second tab holding the
 * database, a browser whose IndexedDB throws).
 */
import { expect, test } from '@playwright/test';
import { startPageServer, type PageServer } from '../fixtures/page-server.js';
import { allFailures, openPage, watchFailures } from './helpers.js';

let server: PageServer;

test.beforeAll(async () => {
  server = await startPageServer((req, res) => {
    if (req.url === '/api/clear-site-data') {
      // What a logout endpoint (or a security response) sends: wipes the origin's databases.
      res.writeHead(200, { 'content-type': 'application/json', 'clear-site-data': '"storage"' });
      res.end('{}');
      return;
    }
    res.writeHead(404).end();
  });
});

test.afterAll(async () => {
  await server.close();
});

test('a real QuotaExceededError is a typed storage_quota_exceeded (the rejection is the report), rolled back, with no unhandled rejection', async ({ page }) => {
  const pageErrors = watchFailures(page);
  // Chromium reads the quota when the origin's storage is first used: set it before the page loads.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: server.url, quotaSize: 256 * 1024 });
  await openPage(page, server.url);
  const result = await page.evaluate(async () => {
    const { row, chunk } = window.__fixtures;
    const store = window.lifeline.createIndexedDbStore({ namespace: 'quota' });
    const trouble: string[] = [];
    store.onTrouble = (error) => trouble.push(error.code);
    await store.write([{ record: row('t1', { lastSeq: 2 }), chunk: chunk('t1', 1, 2) }]);
    // 256 events of 8 Ki random characters: 2 MiB that does not compress, against a 256 KiB quota.
    const big = chunk('t1', 3, 258);
    const noise = () => Array.from(crypto.getRandomValues(new Uint8Array(8 * 1024)), (byte) => String.fromCharCode(33 + (byte % 90))).join('');
    for (const event of big.events) if (event.type === 'delta') (event as { text: string }).text = noise();
    let code: string | undefined;
    try {
      await store.write([{ record: row('t1', { lastSeq: 258 }), chunk: big }]);
    } catch (error) {
      code = (error as { code?: string }).code;
    }
    // The store still reads after the failure (whether Chromium lets a small write
    // through right after depends on its usage accounting, not on the store).
    const afterFailure = await store.loadTurn('t1');
    return { code, trouble, lastSeq: afterFailure?.record.lastSeq, events: afterFailure?.events.length };
  });
  expect(result.code).toBe('storage_quota_exceeded');
  // Reported once, by the rejection: the client degrades with it as the cause.
  expect(result.trouble).toEqual([]);
  // Nothing of the failed write landed: neither the chunk nor the row's new lastSeq.
  expect(result).toMatchObject({ lastSeq: 2, events: 2 });
  expect(await allFailures(page, pageErrors)).toEqual([]);
});

test('IndexedDB throwing on open, or missing, is storage_unavailable', async ({ page }) => {
  const pageErrors = watchFailures(page);
  await page.addInitScript(() => {
    IDBFactory.prototype.open = () => {
      throw new DOMException('The user denied permission to access the database.', 'SecurityError');
    };
  });
  await openPage(page, server.url);
  const result = await page.evaluate(async () => {
    const codes: (string | undefined)[] = [];
    const store = window.lifeline.createIndexedDbStore({ namespace: 'throws' });
    for (const attempt of [() => store.open(), () => store.write([{ record: window.__fixtures.row('t1') }]), () => store.loadTurns()]) {
      try {
        await attempt();
        codes.push('resolved');
      } catch (error) {
        codes.push((error as { code?: string }).code);
      }
    }
    Object.defineProperty(window, 'indexedDB', { value: undefined, configurable: true });
    let missing: { code?: string; message?: string } = {};
    try {
      await window.lifeline.createIndexedDbStore({ namespace: 'missing' }).open();
    } catch (error) {
      missing = error as { code?: string; message?: string };
    }
    return { codes, available: window.lifeline.isIndexedDbAvailable(), missing: { code: missing.code, message: missing.message } };
  });
  expect(result.codes).toEqual(['storage_unavailable', 'storage_unavailable', 'storage_unavailable']);
  expect(result.available).toBe(false);
  expect(result.missing.code).toBe('storage_unavailable');
  expect(await allFailures(page, pageErrors)).toEqual([]);
});

test('an upgrade blocked by an old tab that never lets go settles with storage_blocked, no hang', async ({ context }) => {
  const oldTab = await context.newPage();
  const newTab = await context.newPage();
  const pageErrors = [...watchFailures(oldTab), ...watchFailures(newTab)];
  await openPage(oldTab, server.url);
  await openPage(newTab, server.url);
  // The old tab: the database at the current version, held by code that ignores versionchange.
  await oldTab.evaluate(async () => {
    const store = window.lifeline.createIndexedDbStore({ namespace: 'blocked' });
    await store.write([{ record: window.__fixtures.row('t1') }]);
    store.close();
    window.__test['db'] = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open('lifeline:blocked');
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  });
  // The new tab runs a build one schema version ahead (the factory asks for version + 1).
  // Without the store's own timeout this evaluate would hang until the test's timeout.
  const result = await newTab.evaluate(async () => {
    const native = indexedDB;
    const held = (await native.databases()).find((db) => db.name === 'lifeline:blocked')?.version ?? 0;
    const newer: IDBFactory = {
      open: (name: string) => native.open(name, held + 1),
      deleteDatabase: (name) => native.deleteDatabase(name),
      databases: () => native.databases(),
      cmp: (a, b) => native.cmp(a, b),
    };
    const store = window.lifeline.createIndexedDbStore({ namespace: 'blocked', openTimeoutMs: 1_500, indexedDB: newer });
    window.__test['store'] = store;
    try {
      await store.open();
      return { code: 'resolved', details: undefined };
    } catch (error) {
      return { code: (error as { code?: string }).code, details: (error as { details?: unknown }).details };
    }
  });
  expect(result.code).toBe('storage_blocked');
  // Schema version 2 is this build's (chunk-records.ts); the new tab asks for 3.
  expect(result.details).toEqual({ heldVersion: 2, wantedVersion: 3 });

  // Once the old tab closes its connection, the next call goes through.
  await oldTab.evaluate(() => (window.__test['db'] as IDBDatabase).close());
  const loaded = await newTab.evaluate(async () => {
    const store = window.__test['store'] as ReturnType<typeof window.lifeline.createIndexedDbStore>;
    return (await store.loadTurns()).items.map((row) => row.id);
  });
  expect(loaded).toEqual(['t1']);
  expect([...pageErrors, ...(await oldTab.evaluate(() => window.__failures)), ...(await newTab.evaluate(() => window.__failures))]).toEqual([]);
});

test('a tab running the store lets a newer tab upgrade: it closes its connection and reports it', async ({ context }) => {
  const oldTab = await context.newPage();
  const newTab = await context.newPage();
  await openPage(oldTab, server.url);
  await openPage(newTab, server.url);
  await oldTab.evaluate(async () => {
    const store = window.lifeline.createIndexedDbStore({ namespace: 'upgrade' });
    const trouble: string[] = [];
    window.__test['trouble'] = trouble;
    store.onTrouble = (error) => trouble.push(`${error.code}: ${error.message}`);
    await store.write([{ record: window.__fixtures.row('t1') }]);
    window.__test['store'] = store;
  });
  const outcome = await newTab.evaluate(
    () =>
      new Promise<{ version: number; blocked: boolean }>((resolve, reject) => {
        let blocked = false;
        // One past this build's schema version (2).
        const request = indexedDB.open('lifeline:upgrade', 3);
        request.onblocked = () => (blocked = true);
        request.onerror = () => reject(request.error);
        request.onsuccess = () => {
          const db = request.result;
          db.close();
          resolve({ version: db.version, blocked });
        };
      }),
  );
  expect(outcome).toEqual({ version: 3, blocked: false });
  const trouble = await oldTab.evaluate(() => window.__test['trouble'] as string[]);
  expect(trouble).toHaveLength(1);
  expect(trouble[0]).toContain('storage_closed');
  expect(trouble[0]).toContain('Another tab upgraded or deleted the database.');
  // The old build cannot use the newer database: a typed error, not a hang.
  const code = await oldTab.evaluate(async () => {
    const store = window.__test['store'] as ReturnType<typeof window.lifeline.createIndexedDbStore>;
    return store.write([{ record: window.__fixtures.row('t2') }]).then(
      () => 'resolved',
      (error: { code?: string }) => error.code,
    );
  });
  expect(code).toBe('storage_unavailable');
});

test('Clear-Site-Data mid-session: the loss is reported and the next write lands after a lazy reopen', async ({ page }) => {
  const pageErrors = watchFailures(page);
  await openPage(page, server.url);
  await page.evaluate(async () => {
    const store = window.lifeline.createIndexedDbStore({ namespace: 'cleared' });
    const trouble: string[] = [];
    window.__test['trouble'] = trouble;
    store.onTrouble = (error) => trouble.push(error.code);
    window.__test['store'] = store;
    await store.write([{ record: window.__fixtures.row('before') }]);
    await fetch('/api/clear-site-data');
  });
  await expect.poll(() => page.evaluate(() => window.__test['trouble'] as string[])).toEqual(['storage_closed']);
  const after = await page.evaluate(async () => {
    const store = window.__test['store'] as ReturnType<typeof window.lifeline.createIndexedDbStore>;
    await store.write([{ record: window.__fixtures.row('after', { lastSeq: 3 }), chunk: window.__fixtures.chunk('after', 1, 3) }]);
    // Read back through a separate connection: the write is in the recreated database.
    const reader = window.lifeline.createIndexedDbStore({ namespace: 'cleared' });
    const rows = (await reader.loadTurns()).items.map((row) => row.id);
    const events = (await reader.loadTurn('after'))?.events.length;
    reader.close();
    return { rows, events };
  });
  expect(after).toEqual({ rows: ['after'], events: 3 });
  expect(await allFailures(page, pageErrors)).toEqual([]);
});

test('corrupted records injected with raw IndexedDB are skipped and reported; the rest loads', async ({ page }) => {
  const pageErrors = watchFailures(page);
  await openPage(page, server.url);
  const result = await page.evaluate(async () => {
    const { row, chunk, rawPut } = window.__fixtures;
    const store = window.lifeline.createIndexedDbStore({ namespace: 'corrupt' });
    await store.write([{ record: row('good', { createdAt: 1 }) }]);
    await store.write([{ record: row('partial', { createdAt: 2, lastSeq: 6 }), chunk: chunk('partial', 1, 3) }]);
    await store.write([{ record: row('partial', { createdAt: 2, lastSeq: 6 }), chunk: chunk('partial', 4, 6) }]);
    await rawPut(store.databaseName, 'turns', { id: 'foreign', note: 'written by another app' });
    await rawPut(store.databaseName, 'turns', { ...row('bad-status', { createdAt: 3 }), status: 42 });
    await rawPut(store.databaseName, 'chunks', { ...chunk('partial', 4, 6), events: 'garbage' });
    const turns = await store.loadTurns();
    const partial = await store.loadTurn('partial');
    return {
      ids: turns.items.map((item) => item.id),
      skipped: turns.skipped.map((error) => ({ code: error.code, kind: error.kind, key: (error.details as { key: string }).key })),
      partialSeqs: partial?.events.map((event) => event.seq),
      partialLastSeq: partial?.record.lastSeq,
      partialSkipped: partial?.skipped?.map((error) => error.code),
    };
  });
  expect(result.ids).toEqual(['good', 'partial']);
  expect(result.skipped).toEqual(
    expect.arrayContaining([
      { code: 'storage_corrupt_record', kind: 'storage', key: '"foreign"' },
      { code: 'storage_corrupt_record', kind: 'storage', key: '"bad-status"' },
    ]),
  );
  expect(result.skipped).toHaveLength(2);
  expect(result.partialSeqs).toEqual([1, 2, 3]);
  expect(result.partialLastSeq).toBe(3);
  expect(result.partialSkipped).toEqual(['storage_corrupt_record']);
  expect(await allFailures(page, pageErrors)).toEqual([]);
});
