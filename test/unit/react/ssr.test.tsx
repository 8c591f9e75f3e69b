// Runs in Node on purpose (no DOM): a server render must touch no browser global and
// must not make the client follow, connect or send anything.
import { StrictMode } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it, vi } from 'vitest';
import {
  LifelineProvider,
  useConversation,
  useLifelineDiagnostics,
  useStorageStatus,
  useTurn,
} from '../../../src/react/index.js';
import { createLifeline } from '../../../src/client.js';
import type { Diagnostic } from '../../../src/types.js';
import { createFakeClient } from './fake-client.js';

function App() {
  const { messages, status, outbox } = useConversation('c1');
  const turn = useTurn('t1');
  const diagnostics = useLifelineDiagnostics();
  const storage = useStorageStatus();
  return (
    <main data-conversation-id="c1">
      <p>{`${messages.length} messages, ${outbox.length} queued, ${status}`}</p>
      <p>{`turn: ${turn?.text ?? 'not loaded'}`}</p>
      <p>{`${diagnostics.length} diagnostics, storage ${storage.state}`}</p>
    </main>
  );
}

describe('server rendering', () => {
  it('renders every hook to a string without browser globals or client activity', () => {
    expect(typeof window).toBe('undefined');
    expect(typeof document).toBe('undefined');
    const client = createFakeClient();
    const html = renderToString(
      <StrictMode>
        <LifelineProvider client={client}>
          <App />
        </LifelineProvider>
      </StrictMode>,
    );
    expect(html).toContain('0 messages, 0 queued, online');
    expect(html).toContain('not loaded');
    expect(html).toContain('storage opening');
    expect(client.turnCalls).toBe(0);
    expect(client.conversationCalls).toBe(0);
    expect(client.diagnosticListeners).toBe(0);
  });

  it('creates the real client quietly: no storage opened, no storage diagnostic, no request', async () => {
    const diagnostics: Diagnostic[] = [];
    const fetch = vi.fn<typeof globalThis.fetch>();
    // As a Next.js page does it: the default IndexedDB storage, created while prerendering.
    const client = createLifeline({ baseUrl: '/api/lifeline', fetch, onDiagnostic: (d) => diagnostics.push(d) });
    const html = renderToString(
      <LifelineProvider client={client}>
        <App />
      </LifelineProvider>,
    );
    expect(html).toContain('storage opening');
    await client.ready;
    client.conversation('c1').getSnapshot();
    expect(diagnostics.filter((d) => d.type === 'storage' || d.type === 'storage-error')).toEqual([]);
    expect(client.storageStatus.getSnapshot().state).toBe('opening');
    expect(fetch).not.toHaveBeenCalled();
    client.dispose();
  });

  it('imports without touching browser globals', async () => {
    const globals = globalThis as Record<string, unknown>;
    const touched: string[] = [];
    for (const name of ['window', 'document', 'navigator', 'indexedDB', 'localStorage']) {
      Object.defineProperty(globals, name, {
        configurable: true,
        get: () => void touched.push(name),
      });
    }
    try {
      // Re-evaluate our modules (React itself stays cached by Node) with the traps in place.
      vi.resetModules();
      await import('../../../src/react/index.js');
    } finally {
      for (const name of ['window', 'document', 'navigator', 'indexedDB', 'localStorage']) delete globals[name];
    }
    expect(touched).toEqual([]);
  });
});
