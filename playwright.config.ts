import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

/** Debian's Chromium when installed (this project's machines); else Playwright's own browser. */
const systemChromium = '/usr/bin/chromium';
const executablePath = process.env['LIFELINE_CHROMIUM'] ?? (existsSync(systemChromium) ? systemChromium : undefined);

export default defineConfig({
  testMatch: ['test/browser/**/*.spec.ts', 'examples/chat/e2e/**/*.spec.ts'],
  timeout: 60_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 2,
  retries: 0,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    headless: true,
    trace: 'off',
    launchOptions: {
      ...(executablePath ? { executablePath } : {}),
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
