/**
 * Shared pieces of the storage browser specs: the page's globals, a page opener that
 * records every page error and unhandled rejection, and raw IndexedDB helpers that run
 * inside the page (passed to `page.evaluate`, so they must be self-contained).
 */
import type { Page } from '@playwright/test';
import type * as Lifeline from '../../../src/index.js';
import type { EventChunk, TurnRecord } from '../../../src/storage/store.js';

declare global {
  interface Window {
    lifeline: typeof Lifeline;
    lifelineReady?: boolean;
    /** Unhandled rejections and uncaught errors seen by the page. */
    __failures: string[];
    /** Whatever a test keeps between evaluate calls. */
    __test: Record<string, unknown>;
    /** Builders of stored records, available in every page. */
    __fixtures: {
      row(id: string, overrides?: Partial<TurnRecord>): TurnRecord;
      chunk(turnId: string, from: number, to: number): EventChunk;
      /** Puts `value` into `storeName` of `database` with plain IndexedDB (no validation). */
      rawPut(database: string, storeName: string, value: unknown): Promise<void>;
    };
  }
}

/** Collects what the page could not handle; the test asserts it stays empty. */
export function watchFailures(page: Page): string[] {
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(`pageerror: ${error.message}`));
  return failures;
}

/** Installs the in-page failure log (before any script), loads the page, waits for the bundle. */
export async function openPage(page: Page, url: string): Promise<void> {
  await page.addInitScript(() => {
    window.__failures = [];
    window.__test = {};
    addEventListener('unhandledrejection', (event) => window.__failures.push(`unhandledrejection: ${String(event.reason)}`));
    addEventListener('error', (event) => window.__failures.push(`error: ${event.message}`));
    window.__fixtures = {
      row: (id, overrides = {}) => ({
        id,
        conversationId: 'conv_1',
        status: 'streaming',
        lastSeq: 0,
        createdAt: 1_000,
        updatedAt: 1_000,
        ...overrides,
      }),
      chunk: (turnId, from, to) => {
        const events: EventChunk['events'] = [];
        for (let seq = from; seq <= to; seq++) events.push({ turnId, seq, type: 'delta', text: `w${seq} ` });
        return { turnId, firstSeq: from, lastSeq: to, events };
      },
      rawPut: (database, storeName, value) =>
        new Promise<void>((resolve, reject) => {
          const request = indexedDB.open(database);
          request.onerror = () => reject(request.error);
          request.onsuccess = () => {
            const db = request.result;
            const tx = db.transaction(storeName, 'readwrite');
            tx.objectStore(storeName).put(value);
            tx.oncomplete = () => {
              db.close();
              resolve();
            };
            tx.onabort = () => {
              db.close();
              reject(tx.error);
            };
          };
        }),
    };
  });
  await page.goto(url);
  await page.waitForFunction(() => window.lifelineReady === true);
}

/** Page errors plus the page's own unhandled-rejection log. */
export async function allFailures(page: Page, pageErrors: string[]): Promise<string[]> {
  return [...pageErrors, ...(await page.evaluate(() => window.__failures))];
}
