/**
 * The example app's server on a deploy's SIGTERM (docs/faults.md, graceful drain): in its
 * own process, a live turn followed over SSE, then the signal. The turn must run to its
 * own `turn.end complete` while its follower keeps streaming, a submission meanwhile is
 * refused `503 shutting_down` with `Retry-After`, and the process exits 0 once drained.
 * Needs the built package (the example imports `lifeline-chat/server`): `npm run build`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { newKey, submitMessage } from '../../fixtures/server.js';
import { openStream } from '../server/sse-reader.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Starts examples/chat/server.ts; resolves with its origin and a wait for a line of its output. */
async function startExample(): Promise<{ child: ChildProcess; origin: string; line(pattern: RegExp): Promise<string> }> {
  const script = fileURLToPath(new URL('../../../examples/chat/server.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    // Drain long enough that only the turn's own end, never the deadline, can finish it.
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', AGENT_TOKENS_PER_SECOND: '60', DRAIN_MS: '30000' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const seen: string[] = [];
  const waiting = new Set<() => void>();
  lines.on('line', (text) => {
    seen.push(text);
    for (const check of [...waiting]) check();
  });
  const line = (pattern: RegExp): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const found = seen.find((text) => pattern.test(text));
        if (found !== undefined) {
          waiting.delete(check);
          resolve(found);
        } else if (child.exitCode !== null || child.signalCode !== null) reject(new Error(`the example exited before printing ${pattern}`));
      };
      waiting.add(check);
      child.once('exit', check);
      check();
    });
  const origin = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(await line(/^Lifeline example chat: /))?.[1] as string;
  return { child, origin, line };
}

describe('the example server on SIGTERM', () => {
  it('lets a live turn finish complete while its follower streams, refuses new submissions 503, then exits 0', async () => {
    const example = await startExample();
    const api = `${example.origin}/api`;
    const answer = await submitMessage(api, 'conv-drain', 'Tell me about drains');
    const stream = await openStream(`${api}/turns/${answer.turnId}/events`);
    expect(stream.response.status).toBe(200);
    await stream.until((messages) => messages.some((message) => message.event === 'delta'));

    const exited = new Promise<number | null>((resolve) => example.child.once('exit', (code) => resolve(code)));
    example.child.kill('SIGTERM');
    await example.line(/SIGTERM: draining/);
    const refused = await fetch(`${api}/conversations/conv-drain/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
      body: JSON.stringify({ content: 'one more' }),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('shutting_down');

    await stream.ended;
    const events = stream.events();
    const end = events.at(-1);
    expect(end).toMatchObject({ type: 'turn.end', status: 'complete' });
    const text = events.flatMap((event) => (event.type === 'delta' ? [event.text] : [])).join('');
    expect(text.length).toBe((end as { textLength: number }).textLength);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
    expect(await exited).toBe(0);
  });
});
