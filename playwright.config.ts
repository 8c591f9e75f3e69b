import { defineConfig } from '@playwright/test';
import { CHROMIUM_FLAGS, chromiumExecutable as executablePath } from './test/chromium.js';

export default defineConfig({
  testMatch: ['test/browser/**/*.spec.ts', 'examples/chat/e2e/**/*.spec.ts', 'examples/next/e2e/**/*.spec.ts'],
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
      args: [...CHROMIUM_FLAGS],
    },
  },
});
