import { startBenchServer } from './lib/bench-server.js';
import { benchThroughput, throughputReport } from './throughput.js';
const server = await startBenchServer();
const r = await benchThroughput(server, { runs: 2, log: console.log });
console.log(throughputReport(r));
await server.close();
