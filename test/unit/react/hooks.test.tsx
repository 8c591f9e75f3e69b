// @vitest-environment happy-dom
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { StrictMode, useState, type ReactNode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { isLifelineError } from '../../../src/errors.js';
import {
  LifelineProvider,
  useConversation,
  useLifeline,
  useLifelineDiagnostics,
  useStorageStatus,
  useTurn,
} from '../../../src/react/index.js';
import type { ConversationItem, Diagnostic } from '../../../src/types.js';
import { createFakeClient, entry, turnSnapshot, type FakeClient } from './fake-client.js';

afterEach(cleanup);

function withClient(client: FakeClient, strict = false) {
  return ({ children }: { children: ReactNode }) => {
    const tree = <LifelineProvider client={client}>{children}</LifelineProvider>;
    return strict ? <StrictMode>{tree}</StrictMode> : tree;
  };
}

const network = (online: boolean): Diagnostic => ({ type: 'network', at: 1, online });

describe('useConversation', () => {
  it('re-renders only when its own snapshot or outbox changes', () => {
    const client = createFakeClient();
    let renders = 0;
    let seen: readonly ConversationItem[] = [];
    function Chat() {
      renders += 1;
      seen = useConversation('c1').messages;
      return <p>{seen.length}</p>;
    }
    render(<Chat />, { wrapper: withClient(client) });
    const conversation = client.conversationsOpened.get('c1')!;
    const settled = renders;

    act(() => conversation.store.poke());
    act(() => conversation.outboxStore.poke());
    act(() => client.conversation('other').store.set({ id: 'other', items: [{ role: 'user', key: 'x', content: 'x' }] }));
    expect(renders).toBe(settled);

    const items: ConversationItem[] = [{ role: 'assistant', key: 't1', turn: turnSnapshot('t1', { text: 'Hi' }) }];
    act(() => conversation.store.set({ id: 'c1', items }));
    expect(renders).toBe(settled + 1);
    expect(seen).toBe(items);
  });

  it('keeps the same messages array across unrelated re-renders', () => {
    const client = createFakeClient();
    const arrays = new Set<readonly ConversationItem[]>();
    let bump = () => {};
    function Chat() {
      const [, setN] = useState(0);
      bump = () => setN((n) => n + 1);
      arrays.add(useConversation('c1').messages);
      return null;
    }
    render(<Chat />, { wrapper: withClient(client) });
    const items: ConversationItem[] = [{ role: 'user', key: 'op', content: 'hello' }];
    act(() => client.conversationsOpened.get('c1')!.store.set({ id: 'c1', items }));
    arrays.clear();
    act(() => bump());
    act(() => bump());
    expect([...arrays]).toEqual([items]);
    expect([...arrays][0]).toBe(items);
  });

  it('sends exactly once per click under StrictMode and never on mount', () => {
    const client = createFakeClient();
    function Composer() {
      const { send, messages } = useConversation('c1');
      return (
        <>
          <button onClick={() => send('hello')}>Send</button>
          <output>{messages.length}</output>
        </>
      );
    }
    render(<Composer />, { wrapper: withClient(client, true) });
    const conversation = client.conversationsOpened.get('c1')!;
    expect(conversation.sent).toEqual([]);
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    expect(conversation.sent).toEqual(['hello']);
    expect(screen.getByRole('status').textContent).toBe('1');
    expect(client.conversationsOpened.size).toBe(1);
    // StrictMode's unmount/remount must leave exactly one live subscription behind.
    expect(conversation.store.listeners).toBe(1);
  });

  it('summarises status for a badge, most urgent first, and exposes retry', async () => {
    const client = createFakeClient();
    let result: ReturnType<typeof useConversation> | undefined;
    function Badge() {
      result = useConversation('c1');
      return null;
    }
    render(<Badge />, { wrapper: withClient(client) });
    const conversation = client.conversationsOpened.get('c1')!;
    expect(result!.status).toBe('online');

    const streaming: ConversationItem = { role: 'assistant', key: 't1', turn: turnSnapshot('t1') };
    act(() => conversation.store.set({ id: 'c1', items: [streaming] }));
    expect(result!.status).toBe('streaming');

    act(() => conversation.outboxStore.set([entry('op1', 'c1', { state: 'sending' })]));
    expect(result!.status).toBe('sending');

    const stalled: ConversationItem = { role: 'assistant', key: 't1', turn: turnSnapshot('t1', { status: 'stalled' }) };
    act(() => conversation.store.set({ id: 'c1', items: [stalled] }));
    expect(result!.status).toBe('reconnecting');

    const recovering: ConversationItem = { role: 'assistant', key: 't1', turn: turnSnapshot('t1', { status: 'recovering' }) };
    act(() => conversation.store.set({ id: 'c1', items: [recovering] }));
    expect(result!.status).toBe('recovering');

    act(() => conversation.outboxStore.set([entry('op1', 'c1', { state: 'failed' })]));
    expect(result!.status).toBe('failed');
    await act(() => result!.retry('op1'));
    expect(conversation.retried).toEqual(['op1']);

    const waiting: ConversationItem = {
      role: 'assistant',
      key: 't1',
      turn: turnSnapshot('t1', { status: 'reconnecting', connection: { state: 'offline', attempt: 2 } }),
    };
    act(() => conversation.store.set({ id: 'c1', items: [waiting] }));
    expect(result!.status).toBe('offline');

    const done: ConversationItem = { role: 'assistant', key: 't1', turn: turnSnapshot('t1', { status: 'complete' }) };
    act(() => conversation.store.set({ id: 'c1', items: [done] }));
    act(() => conversation.outboxStore.set([]));
    expect(result!.status).toBe('online');

    // The browser going offline is news even with nothing in flight.
    act(() => client.emit(network(false)));
    expect(result!.status).toBe('offline');
    act(() => client.emit(network(true)));
    expect(result!.status).toBe('online');
  });
});

describe('useTurn', () => {
  it('opens one handle per id under StrictMode, shared by every reader, and follows changes', () => {
    const client = createFakeClient();
    function Text({ id }: { id: string }) {
      const turn = useTurn(id);
      return <p data-testid={id}>{turn?.text ?? '…'}</p>;
    }
    render(
      <>
        <Text id="t1" />
        <Text id="t1" />
      </>,
      { wrapper: withClient(client, true) },
    );
    expect(client.turnsOpened.size).toBe(1);
    const turn = client.turnsOpened.get('t1')!;
    expect(turn.store.listeners).toBe(2);
    act(() => turn.store.set(turnSnapshot('t1', { text: 'Hello' })));
    expect(screen.getAllByTestId('t1').map((p) => p.textContent)).toEqual(['Hello', 'Hello']);
  });

  it('does not re-render when the turn notifies without a new snapshot, and idles without an id', () => {
    const client = createFakeClient();
    let renders = 0;
    function Text({ id }: { id: string | undefined }) {
      renders += 1;
      return <p>{useTurn(id)?.status ?? 'none'}</p>;
    }
    const view = render(<Text id={undefined} />, { wrapper: withClient(client) });
    expect(client.turnCalls).toBe(0);
    expect(view.container.textContent).toBe('none');
    view.rerender(<Text id="t2" />);
    const settled = renders;
    act(() => client.turnsOpened.get('t2')!.store.poke());
    expect(renders).toBe(settled);
    expect(view.container.textContent).toBe('streaming');
  });
});

describe('useLifelineDiagnostics', () => {
  it('keeps the last N in a stable array', () => {
    const client = createFakeClient();
    const arrays: (readonly Diagnostic[])[] = [];
    let bump = () => {};
    function Log() {
      const [, setN] = useState(0);
      bump = () => setN((n) => n + 1);
      arrays.push(useLifelineDiagnostics(2));
      return null;
    }
    render(<Log />, { wrapper: withClient(client, true) });
    expect(client.diagnosticListeners).toBe(1);
    const d1 = network(false);
    const d2 = network(true);
    const d3: Diagnostic = { type: 'outbox-replay', at: 3, count: 1 };
    act(() => client.emit(d1));
    act(() => client.emit(d2));
    act(() => client.emit(d3));
    const last = arrays.at(-1)!;
    expect(last).toEqual([d2, d3]);
    act(() => bump());
    expect(arrays.at(-1)).toBe(last);
  });
});

describe('useStorageStatus and the provider', () => {
  it('follows the storage status', () => {
    const client = createFakeClient();
    function Status() {
      return <p>{useStorageStatus().state}</p>;
    }
    const view = render(<Status />, { wrapper: withClient(client) });
    expect(view.container.textContent).toBe('opening');
    act(() => client.storage.set({ state: 'degraded', kind: 'indexeddb' }));
    expect(view.container.textContent).toBe('degraded');
  });

  it('throws a typed error outside a provider', () => {
    function Orphan() {
      useLifeline();
      return null;
    }
    let caught: unknown;
    const original = console.error;
    console.error = () => {};
    try {
      render(<Orphan />);
    } catch (error) {
      caught = error;
    } finally {
      console.error = original;
    }
    expect(isLifelineError(caught) && caught.code).toBe('invalid_argument');
  });
});
