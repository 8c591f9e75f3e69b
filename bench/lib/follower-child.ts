/**
 * Followers of one live turn, held in their own process: `FOLLOW_URL` opened
 * `FOLLOWERS` times, each on its own socket, what they receive read and discarded.
 * Reading 1 000 streams keeps an event loop busy; in the benchmark's own process that
 * work would delay the timed requests' answers and be counted as the server's. Prints
 * `open` once every stream answered; then, for each line `<seq>` on stdin, prints how
 * many events the furthest-behind follower is short of `seq`. Used by
 * bench/server-path.ts.
 */
import { request, type IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { lastSeqIn } from './last-seq.js';

const url = process.env['FOLLOW_URL'] ?? '';
const count = Number(process.env['FOLLOWERS'] ?? 0);

function open(): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream' }, agent: false }, resolve);
    req.once('error', reject);
    req.end();
  });
}

/** Last seq each follower received. */
const seqs = new Float64Array(count);

await Promise.all(
  Array.from({ length: count }, async (_, i) => {
    const res = await open();
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
    res.on('error', () => undefined);
    res.on('data', (chunk: Buffer) => {
      seqs[i] = lastSeqIn(chunk) ?? (seqs[i] as number);
    });
  }),
);
process.stdout.write('open\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  let behind = 0;
  for (const seq of seqs) behind = Math.max(behind, Number(line) - seq);
  process.stdout.write(`${behind}\n`);
});
