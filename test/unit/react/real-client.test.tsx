// @vitest-environment happy-dom
/**
 * The hooks over the real client and the real reference server, wired in-process: the
 * client's `fetch` calls the handler directly, so every request the hooks cause is seen.
 */
import { act, cleanup, render, screen, waitFor } from '@testing-library/react';
import { StrictMode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { createLifeline } from '../../../src/client.js';
import { LifelineProvider, useConversation, useTurn } from '../../../src/react/index.js';
import { createLifelineHandler, type LifelineHandler } from '../../../src/server/http/handler.js';
import type { LifelineClient } from '../../../src/types.js';
import { textAgent } from '../../fixtures/agents.js';

const TEXT = 'Hello from the reference server, streamed in small pieces. ✨ 你好';

interface Rig {
  client: LifelineClient;
  handler: LifelineHandler;
  requests: string[];
}

let rig: Rig | undefined;

/** A client whose fetch goes straight to a reference handler streaming {@link TEXT}; every request is recorded. */
function createRig(pace: { chunk: number; delayMs: number } = { chunk: 4, delayMs: 2 }): Rig {
  const handler = createLifelineHandler({ agent: textAgent(TEXT, pace), basePath: '/api' });
  const requests: string[] = [];
  const client = createLifeline({
    baseUrl: 'http://lifeline.test/api',
    storage: 'memory',
    fetch: async (input, init) => {
      const request = new Request(input, init);
      requests.push(`${request.method} ${new URL(request.url).pathname}`);
      return handler(request);
    },
  });
  return (rig = { client, handler, requests });
}

afterEach(async () => {
  cleanup();
  rig?.client.dispose();
  await rig?.handler.close();
  rig = undefined;
});

async function submit(handler: LifelineHandler, conversationId: string): Promise<string> {
  const response = await handler(
    new Request(`http://lifeline.test/api/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `key-${conversationId}-0123456789` },
      body: JSON.stringify({ content: 'hi' }),
    }),
  );
  return ((await response.json()) as { turnId: string }).turnId;
}

function Answer({ turnId }: { turnId: string }) {
  const turn = useTurn(turnId);
  return (
    <p data-status={turn?.status ?? 'none'} data-testid="answer">
      {turn?.text}
    </p>
  );
}

function Conversation({ id }: { id: string }) {
  const { messages } = useConversation(id);
  return (
    <ul>
      {messages.map((m) => (
        <li key={m.key} data-status={m.turn?.status}>
          {m.turn?.text}
        </li>
      ))}
    </ul>
  );
}

describe('hooks over the real client', () => {
  it('useTurn under StrictMode opens one stream and shows the whole text', async () => {
    const { client, handler, requests } = createRig();
    const turnId = await submit(handler, 'c1');
    render(
      <StrictMode>
        <LifelineProvider client={client}>
          <Answer turnId={turnId} />
          <Answer turnId={turnId} />
        </LifelineProvider>
      </StrictMode>,
    );
    await waitFor(() => expect(screen.getAllByTestId('answer').map((p) => p.dataset['status'])).toEqual(['complete', 'complete']));
    expect(screen.getAllByTestId('answer').map((p) => p.textContent)).toEqual([TEXT, TEXT]);
    expect(requests.filter((r) => r.endsWith(`/turns/${turnId}/events`))).toHaveLength(1);
    // Nothing sent twice by the double mount; the only POST is the turn's one delivery receipt
    // (docs/protocol.md §10), which may land before or after the text shows.
    const receipt = `POST /api/turns/${turnId}/delivered`;
    expect(requests.filter((r) => r.startsWith('POST') && r !== receipt)).toHaveLength(0);
    expect(requests.filter((r) => r === receipt).length).toBeLessThanOrEqual(1);
  });

  it('useTurn counts its views: unmounting one keeps the turn streaming for the other, on the same stream', async () => {
    const { client, handler, requests } = createRig({ chunk: 2, delayMs: 15 });
    const turnId = await submit(handler, 'views');
    const views = (count: number) => (
      <StrictMode>
        <LifelineProvider client={client}>
          {Array.from({ length: count }, (_, i) => (
            <Answer key={i} turnId={turnId} />
          ))}
        </LifelineProvider>
      </StrictMode>
    );
    const view = render(views(2));
    await waitFor(() => expect(screen.getAllByTestId('answer')[0]!.textContent!.length).toBeGreaterThan(4));
    // One of two views goes: the other still sees the whole turn, on the same one stream.
    view.rerender(views(1));
    await waitFor(() => expect(screen.getByTestId('answer').dataset['status']).toBe('complete'));
    expect(screen.getByTestId('answer').textContent).toBe(TEXT);
    expect(requests.filter((r) => r.endsWith(`/turns/${turnId}/events`))).toHaveLength(1);
  });

  it('useTurn stops the turn when its last view unmounts', async () => {
    const handler = createLifelineHandler({ agent: textAgent(TEXT, { chunk: 1, delayMs: 30 }), basePath: '/api' });
    const client = createLifeline({ baseUrl: 'http://lifeline.test/api', storage: 'memory', fetch: async (input, init) => handler(new Request(input, init)) });
    rig = { client, handler, requests: [] };
    const turnId = await submit(handler, 'last');
    const view = render(
      <LifelineProvider client={client}>
        <Answer turnId={turnId} />
      </LifelineProvider>,
    );
    await waitFor(() => expect(screen.getByTestId('answer').dataset['status']).toBe('streaming'));
    view.unmount();
    const watcher = client.turns.getSnapshot().find((turn) => turn.id === turnId);
    expect(watcher).toBeDefined();
    await waitFor(() => expect(client.turns.getSnapshot().find((turn) => turn.id === turnId)?.connection.state).toBe('idle'));
    const stoppedAt = client.turns.getSnapshot().find((turn) => turn.id === turnId)!.lastSeq;
    expect(stoppedAt).toBeLessThan(TEXT.length);
  });

  it('useConversation lists a followed turn of its conversation, and not of another', async () => {
    const { client, handler } = createRig();
    const mine = await submit(handler, 'mine');
    const theirs = await submit(handler, 'theirs');
    render(
      <LifelineProvider client={client}>
        <Conversation id="mine" />
      </LifelineProvider>,
    );
    act(() => {
      client.turn(mine);
      client.turn(theirs);
    });
    await waitFor(() => expect(screen.getByRole('listitem').dataset['status']).toBe('complete'));
    expect(screen.getAllByRole('listitem').map((li) => li.textContent)).toEqual([TEXT]);
  });
});
