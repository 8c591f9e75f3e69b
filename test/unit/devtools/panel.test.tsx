// @vitest-environment happy-dom
/**
 * The devtools panel over a scripted client: what it files where (a submission's story joins
 * its turn once accepted), what it shows of the public stores, and that its buttons call
 * `client.drill` and nothing else. The real thing, in Chromium, is examples/chat/e2e/devtools.spec.ts.
 */
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { LifelineDevtools } from '../../../src/devtools/production.js';
import { TransportError } from '../../../src/errors.js';
import { createFakeClient, entry, turnSnapshot } from '../react/fake-client.js';

afterEach(cleanup);

/** Lets the recorder's batched notification (a microtask) reach React. */
const settle = () => act(async () => {});

describe('LifelineDevtools', () => {
  it('shows each turn with status, connection, seq and retries, and the newest turn’s timeline', async () => {
    const client = createFakeClient();
    render(<LifelineDevtools client={client} embedded />);
    act(() => client.turnList.set([turnSnapshot('turn_old', { status: 'complete', lastSeq: 9 }), turnSnapshot('turn_new', { status: 'reconnecting', lastSeq: 4, connection: { state: 'waiting', attempt: 2, nextRetryAt: 0 } })]));
    client.emit({ type: 'disconnect', at: 0, turnId: 'turn_new', cause: new TransportError('network_error', 'Cut.') });
    client.emit({ type: 'retry', at: 0, scope: 'stream', id: 'turn_new', attempt: 2, delayMs: 250 });
    client.emit({ type: 'completed', at: 0, turnId: 'turn_old', status: 'complete' });
    await settle();

    const row = document.querySelector('[data-devtools-turn="turn_new"]')!;
    expect(row.getAttribute('data-devtools-status')).toBe('reconnecting');
    expect(row.getAttribute('data-devtools-connection')).toBe('waiting');
    expect([...row.querySelectorAll('td')].slice(1, 5).map((td) => td.textContent)).toEqual(['reconnecting', 'waiting', '4', '2']);
    const timeline = screen.getByRole('list', { name: 'Timeline of turn turn_new' });
    // Newest first; the other turn's end is not in this one's timeline.
    expect([...timeline.querySelectorAll('[data-diagnostic]')].map((li) => li.getAttribute('data-diagnostic'))).toEqual(['retry', 'disconnect']);

    fireEvent.click(document.querySelector('[data-devtools-turn="turn_old"]')!);
    expect(screen.getByRole('list', { name: 'Timeline of turn turn_old' }).textContent).toContain('ended complete, verified');
  });

  it('a submission’s diagnostics show under its outbox entry, then open its turn’s timeline once accepted', async () => {
    const client = createFakeClient();
    render(<LifelineDevtools client={client} embedded />);
    act(() => client.outboxEntries.set([entry('op_1234567890abcdef', 'conv', { attempts: 1, nextAttemptAt: Date.UTC(2026, 0, 1, 12, 0, 5), lastError: new TransportError('server_unavailable', 'down').toJSON() })]));
    client.emit({ type: 'submit', at: 1, operationId: 'op_1234567890abcdef', conversationId: 'conv', attempt: 1 });
    client.emit({ type: 'retry', at: 2, scope: 'submit', id: 'op_1234567890abcdef', attempt: 1, delayMs: 1000 });
    await settle();
    const queued = document.querySelector('[data-devtools-operation="op_1234567890abcdef"]')!;
    expect(queued.getAttribute('data-devtools-state')).toBe('queued');
    expect(queued.textContent).toContain('after server_unavailable');
    expect([...queued.querySelectorAll('[data-diagnostic]')].map((li) => li.getAttribute('data-diagnostic'))).toEqual(['retry', 'submit']);

    client.emit({ type: 'accepted', at: 3, operationId: 'op_1234567890abcdef', turnId: 'turn_a', replayed: false });
    client.emit({ type: 'connect', at: 4, turnId: 'turn_a', attempt: 0, lastEventId: 0 });
    act(() => {
      client.outboxEntries.set([]);
      client.turnList.set([turnSnapshot('turn_a')]);
    });
    await settle();
    const timeline = screen.getByRole('list', { name: 'Timeline of turn turn_a' });
    expect([...timeline.querySelectorAll('[data-diagnostic]')].map((li) => li.getAttribute('data-diagnostic'))).toEqual(['connect', 'accepted', 'retry', 'submit']);
    expect(screen.getByRole('region', { name: 'Outbox' }).textContent).toContain('Empty');
  });

  it('its drill buttons call client.drill for the turn shown, and say what came of it', async () => {
    const client = createFakeClient();
    render(<LifelineDevtools client={client} embedded />);
    act(() => client.turnList.set([turnSnapshot('turn_a')]));
    const turns = screen.getByRole('region', { name: 'Turns' });
    fireEvent.click(within(turns).getByRole('button', { name: 'Cut' }));
    fireEvent.click(within(turns).getByRole('button', { name: 'Stall' }));
    fireEvent.click(within(turns).getByRole('button', { name: 'Replay' }));
    expect(client.drills).toEqual([
      ['turn_a', 'cut'],
      ['turn_a', 'stall'],
      ['turn_a', 'replay'],
    ]);
    expect(within(turns).getByRole('status').textContent).toBe('replay: done, watch the timeline');
  });

  it('floats closed by default, keeps recording while closed, and shows storage when opened', async () => {
    const client = createFakeClient();
    render(<LifelineDevtools client={client} />);
    expect(screen.queryByRole('complementary', { name: 'Lifeline devtools' })).toBeNull();
    client.emit({ type: 'network', at: 0, online: false });
    act(() => client.storage.set({ state: 'degraded', kind: 'indexeddb', cause: new TransportError('network_error', 'quota') }));
    await settle();
    fireEvent.click(screen.getByRole('button', { name: 'Open Lifeline devtools' }));
    const storage = screen.getByRole('region', { name: 'Storage' });
    expect(storage.querySelector('[data-devtools-storage]')!.getAttribute('data-devtools-storage')).toBe('degraded');
    expect(storage.textContent).toContain('browser offline');
  });
});
