import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/unit/**/*.test.tsx'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: forks keep servers, sockets and timers of one file away from another.
    pool: 'forks',
    maxWorkers: 2,
  },
});
