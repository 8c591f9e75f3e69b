import { defineConfig } from 'vitest/config';

// The package tests pack, install and type-check the package as a stranger would; one
// file, run on its own after the unit tests (`npm run test:package`).
export default defineConfig({
  test: {
    include: ['test/package/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 240_000,
  },
});
