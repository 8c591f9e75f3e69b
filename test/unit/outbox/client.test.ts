/**
 * The outbox behind the public path: `client.conversation(id).send(content)` against the
 * reference server (memory storage, Node: no Web Locks, so the storage lease is used).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import '../client/support/dom-shim.js';
import { createLifeline } from '../../../src/client.js';
import type { Diagnostic, LifelineClient } from '../../../src/types.js';
import { startTestServer, type TestServer } from '../../fixtures/server.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(serverOptions: Parameters<typeof startTestServer>[0] = {}): Promise<{ ts: TestServer; client: LifelineClient; diagnostics: Diagnostic[] }> {
  const ts = await startTestServer(serverOptions);
  cleanups.push(() => ts.close());
  const diagnostics: Diagnostic[] = [];
  const client = createLifeline({
    baseUrl: ts.baseUrl,
    storage: 'memory',
    retry: { initialDelayMs: 10, maxDelayMs: 50 },
    onDiagnostic: (diagnostic) => diagnostics.push(diagnostic),
  });
  cleanups.push(() => client.dispose());
  await client.ready;
  return { ts, client, diagnostics };
}

describe('conversation.send', () => {
  it('stores, sends, follows the turn; the user message sits before its answer', async () => {
    const { client, diagnostics } = await setup();
    const conversation = client.conversation('wired');
    const submission = conversation.send('hello through the client');
    expect(submission.operationId).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(submission.getSnapshot()).toMatchObject({ state: 'queued', content: 'hello through the client' });
    expect(conversation.outbox.getSnapshot()).toHaveLength(1);
    expect(client.outbox.getSnapshot()).toHaveLength(1);

    const turn = await submission.accepted;
    const final = await turn.completed;
    expect(final.status).toBe('complete');
    expect(final.text).toBe('Hello from the Lifeline test server.');
    expect(diagnostics.filter((d) => d.type === 'accepted')).toMatchObject([{ operationId: submission.operationId, turnId: turn.id, replayed: false }]);

    // Accepted entries leave the pending views at once; the conversation keeps the pair.
    expect(conversation.outbox.getSnapshot()).toEqual([]);
    expect(client.outbox.getSnapshot()).toEqual([]);
    await vi.waitFor(() =>
      expect(conversation.getSnapshot().items.map((item) => [item.role, item.key])).toEqual([
        ['user', submission.operationId],
        ['assistant', turn.id],
      ]),
    );
    expect(conversation.getSnapshot().items[0]?.content).toBe('hello through the client');
  });

  it('a rejected message fails visibly: accepted rejects with the server code, no turn', async () => {
    const { client, diagnostics } = await setup({ maxBodyBytes: 24 });
    const conversation = client.conversation('rejected');
    const submission = conversation.send('longer than twenty-four bytes');
    await expect(submission.accepted).rejects.toMatchObject({ code: 'submission_rejected', status: 413, serverCode: 'payload_too_large' });
    expect(submission.getSnapshot()?.state).toBe('failed');
    expect(conversation.outbox.getSnapshot().map((e) => e.state)).toEqual(['failed']);
    expect(conversation.getSnapshot().items.map((item) => item.role)).toEqual(['user']);
    expect(diagnostics.filter((d) => d.type === 'failed' && d.scope === 'submit')).toHaveLength(1);
    await conversation.outbox.discard(submission.operationId);
    expect(conversation.getSnapshot().items).toEqual([]);
  });

  it('a discarded message rejects accepted as cancelled', async () => {
    const { client } = await setup();
    // Discarded before its storage write settled, so it was never posted.
    const conversation = client.conversation('discarded');
    const submission = conversation.send('never mind');
    await conversation.outbox.discard(submission.operationId);
    await expect(submission.accepted).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('clearStorage (logout) drops pending submissions: nothing is sent for them later', async () => {
    const { client, ts } = await setup();
    const submission = client.conversation('logout').send('written before logout');
    await client.clearStorage();
    await expect(submission.accepted).rejects.toMatchObject({ code: 'cancelled' });
    expect(client.outbox.getSnapshot()).toEqual([]);
    const after = client.conversation('logout').send('after logout');
    await after.accepted;
    const turns = (await (await fetch(`${ts.baseUrl}/conversations/logout/turns`)).json()) as { turns: unknown[] };
    expect(turns.turns).toHaveLength(1);
  });

  it('bad input throws invalid_argument from send', async () => {
    const { client } = await setup();
    expect(() => client.conversation('c').send(7 as unknown as string)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});
