#!/usr/bin/env node
// `npm run bench`: the benchmarks are TypeScript under bench/ (type-checked with the
// project); tsx runs them. Options: --only throughput,resume,…  --runs N  --no-build
import { register } from 'tsx/esm/api';

register();
await import('../bench/run-bench.ts');
