/**
 * Delivery latency in a run of the example app (docs/protocol.md section 10): from a turn's
 * `turn.end` to its receipt landing on the server, as the handler's
 * `lifeline.delivery.latency` histogram records it (a recording meter stands in for
 * OpenTelemetry). Headless Chromium drives the hooks page: answers followed to their end
 * with the page open, then answers whose stream the fault lab cuts mid-answer (the client
 * resumes, verifies, then sends the receipt).
 *
 *   npm run build && npx tsx bench/delivery-latency.ts [--turns 20]
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium, type Page } from '@playwright/test';
import type { CounterLike, HistogramLike, MeterLike } from '../src/server/metrics.js';
import { startExampleServer, type ExampleServer } from '../examples/chat/server.js';
import { CHROMIUM_FLAGS, chromiumExecutable as executablePath } from '../test/chromium.js';
import { fixed, quantile } from './lib/stats.js';

export interface DeliveryLatencyResult {
  scenario: string;
  latenciesMs: number[];
}

/** A meter whose delivery histogram hands each value to whoever waits for the next one. */
function recordingMeter() {
  const recorded: number[] = [];
  const waiters: ((value: number) => void)[] = [];
  const meter: MeterLike = {
    createCounter: (): CounterLike => ({ add() {} }),
    createHistogram: (name): HistogramLike => ({
      record(value) {
        if (name !== 'lifeline.delivery.latency') return;
        recorded.push(value);
        waiters.shift()?.(value);
      },
    }),
  };
  /** The next value recorded after this call (values recorded before are not waited for). */
  const next = (): Promise<number> => new Promise((resolve) => waiters.push(resolve));
  return { meter, recorded, next };
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

const assistants = '[data-message-role="assistant"][data-turn-id]';

/** One turn: sent, optionally cut once its text starts, followed to its receipt. */
async function oneTurn(page: Page, app: ExampleServer, next: () => Promise<number>, index: number, cut: boolean): Promise<number> {
  const receipt = next();
  await send(page, `How should I plan step ${index} of the launch?`);
  const turn = page.locator(assistants).nth(index);
  if (cut) {
    await turn.locator('[data-turn-text]').filter({ hasText: /\S{3}/u }).waitFor({ timeout: 30_000 });
    app.lab.cut();
  }
  await page.locator(`${assistants}[data-status="complete"]`).nth(index).waitFor({ timeout: 60_000 });
  return receipt;
}

export async function benchDeliveryLatency(options: { turns?: number; log?: (line: string) => void } = {}): Promise<DeliveryLatencyResult[]> {
  const turns = options.turns ?? 20;
  const log = options.log ?? (() => {});
  const example = fileURLToPath(new URL('../examples/chat/', import.meta.url));
  const { build } = await import('vite');
  await build({ configFile: join(example, 'vite.config.ts'), logLevel: 'error' });
  const recording = recordingMeter();
  const app = await startExampleServer({ port: 0, tokensPerSecond: 200, support: { meter: recording.meter } });
  const browser = await chromium.launch({ ...(executablePath ? { executablePath } : {}), args: [...CHROMIUM_FLAGS] });
  const results: DeliveryLatencyResult[] = [];
  try {
    for (const scenario of [
      { name: 'followed to its end', cut: false },
      { name: 'stream cut mid-answer, resumed', cut: true },
    ]) {
      const page = await browser.newPage();
      await page.goto(`${app.url}/?c=bench-delivery-${scenario.cut ? 'cut' : 'plain'}-${Date.now().toString(36)}`);
      const latenciesMs: number[] = [];
      for (let i = 0; i < turns; i++) latenciesMs.push(await oneTurn(page, app, recording.next, i, scenario.cut));
      log(`  ${scenario.name}: ${turns} receipts`);
      results.push({ scenario: scenario.name, latenciesMs });
      await page.close();
    }
  } finally {
    await browser.close();
    await app.close();
  }
  return results;
}

export function deliveryLatencyReport(results: readonly DeliveryLatencyResult[]): string {
  return [
    'turn.end → receipt recorded, from the handler\'s `lifeline.delivery.latency` histogram (ms, server clock), the example app\'s hooks page in headless Chromium, one turn at a time.',
    '',
    '| scenario | receipts | p50 ms | p95 ms | max ms |',
    '|---|---|---|---|---|',
    ...results.map((r) => `| ${r.scenario} | ${r.latenciesMs.length} | ${fixed(quantile(r.latenciesMs, 0.5))} | ${fixed(quantile(r.latenciesMs, 0.95))} | ${fixed(Math.max(...r.latenciesMs))} |`),
  ].join('\n');
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const { values } = parseArgs({ options: { turns: { type: 'string', default: '20' } } });
  console.log(deliveryLatencyReport(await benchDeliveryLatency({ turns: Number(values.turns), log: (line) => console.log(line) })));
}
