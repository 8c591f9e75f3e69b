/**
 * The client entry must import (and a client must be creatable) where there is no
 * browser at all: server-side rendering, Node. This file deliberately does not load
 * the DOM stand-ins the other client tests use.
 */
import { describe, expect, it } from 'vitest';

describe('server-side rendering', () => {
  it('imports the entry and creates a client without touching browser globals', async () => {
    const scope = globalThis as Record<string, unknown>;
    expect(scope['window']).toBeUndefined();
    expect(scope['document']).toBeUndefined();
    const lifeline = await import('../../../src/index.js');
    const diagnostics: string[] = [];
    const client = lifeline.createLifeline({ baseUrl: '/api', onDiagnostic: (d) => diagnostics.push(d.type) });
    await client.ready;
    // No IndexedDB in Node: a server render opens no storage and says nothing about it.
    expect(client.storageStatus.getSnapshot()).toEqual(expect.objectContaining({ state: 'opening' }));
    expect(diagnostics.filter((type) => type.startsWith('storage'))).toEqual([]);
    expect(client.turns.getSnapshot()).toEqual([]);
    // Streaming needs the browser: a turn followed here fails visibly instead of hanging or crashing.
    const failed = await client.turn('turn_on_the_server').completed;
    expect(failed.status).toBe('failed');
    expect(failed.error?.code).toBe('invalid_argument');
    client.dispose();
    expect(scope['window']).toBeUndefined();
    expect(scope['document']).toBeUndefined();
  });
});
