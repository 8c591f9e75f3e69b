import { fileURLToPath } from 'node:url';
import type { NextConfig } from 'next';

// The repository root: where node_modules is, and where `lifeline-chat` resolves to its own
// package (its `exports`, the built dist/), as it does for an app that installed it.
const root = fileURLToPath(new URL('../..', import.meta.url));

const config: NextConfig = {
  turbopack: { root },
  outputFileTracingRoot: root,
  // The repository's `tsc` type-checks this app with everything else.
  typescript: { ignoreBuildErrors: true },
  // Follow streams must reach the browser as they are written.
  compress: false,
  distDir: process.env['NEXT_DIST_DIR'] ?? '.next',
};

export default config;
