/** The outbox's snapshots and storage re-reads, its headers and input checks, its localStorage journal, and its timeouts on real timers. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createOutbox, type OutboxDeps } from '../../../src/outbox/outbox.js';
import { accepted, baseDeps, channelFactory, createFakeFetch, createFakeNetwork, createFakeStorage, createRecorder, errorAnswer, settle, until } from './helpers.js';
import { disposeOutboxes, setup, track, useFakeClock } from './outbox-rig.js';

afterEach(disposeOutboxes);

describe('outbox (fake timers): snapshots, headers and input', () => {
  useFakeClock();

  it('keeps the same snapshot object while nothing changes, even across storage re-reads', async () => {
    const channel = channelFactory();
    const storage = createFakeStorage();
    let reads = 0;
    const load = storage.loadOutbox.bind(storage);
    storage.loadOutbox = () => {
      reads += 1;
      return load();
    };
    const { outbox } = setup(() => errorAnswer(400, 'invalid_body'), { channel, storage });
    outbox.enqueue('conv', 'x');
    await until(() => outbox.entries.getSnapshot()[0]?.state === 'failed', 'failed');
    await settle();
    const snapshot = outbox.entries.getSnapshot();
    expect(outbox.entries.getSnapshot()).toBe(snapshot);
    let notified = 0;
    outbox.entries.subscribe(() => notified++);
    // Another tab announces a change: this tab re-reads storage and finds nothing new.
    const readsBefore = reads;
    const otherTab = channel('lifeline-outbox:default');
    otherTab.postMessage({ type: 'changed' });
    otherTab.close();
    await until(() => reads > readsBefore, 're-read');
    await settle();
    expect(outbox.entries.getSnapshot()).toBe(snapshot);
    expect(notified).toBe(0);
  });

  it('a change made here while storage is being re-read is not undone by that read', async () => {
    const channel = channelFactory();
    const storage = createFakeStorage();
    const network = createFakeNetwork(true);
    let reject = true;
    const { outbox, entry } = setup((call) => (reject ? errorAnswer(400, 'invalid_body') : accepted(call)), { channel, storage, network });
    const failed = outbox.enqueue('conv', 'x');
    await until(() => storage.rows.get(failed.operationId)?.state === 'failed', 'failed and stored');
    // Offline, an entry of another conversation keeps the sender waiting (no re-read when it wakes).
    network.set(false);
    const waiting = outbox.enqueue('other', 'y');
    await until(() => storage.rows.has(waiting.operationId), 'waiting entry stored');
    await settle();
    // Another tab's notice starts a re-read that returns what storage holds now (failed), once released.
    let release: (() => void) | undefined;
    const load = storage.loadOutbox.bind(storage);
    storage.loadOutbox = async () => {
      storage.loadOutbox = load;
      const result = await load();
      await new Promise<void>((resolve) => (release = resolve));
      return result;
    };
    const otherTab = channel('lifeline-outbox:default');
    otherTab.postMessage(null);
    otherTab.close();
    await until(() => release !== undefined, 'the re-read under way');
    reject = false;
    await outbox.retry(failed.operationId);
    release?.();
    await settle();
    expect(entry(failed.operationId)?.state).toBe('queued');
    network.set(true);
    await until(() => entry(failed.operationId)?.state === 'accepted' && entry(waiting.operationId)?.state === 'accepted', 'both sent');
  });

  it('resolves headers afresh before every attempt', async () => {
    let token = 0;
    let calls = 0;
    const { outbox, fetch, recorder } = setup((call) => (++calls === 1 ? errorAnswer(503) : accepted(call)), {
      headers: async () => ({ authorization: `Bearer ${++token}` }),
    });
    outbox.enqueue('conv', 'x');
    await until(() => recorder.of('retry').length === 1, 'retry');
    await vi.advanceTimersByTimeAsync(recorder.of('retry')[0]?.delayMs ?? 0);
    await until(() => fetch.calls.length === 2, 'second attempt');
    expect(fetch.calls.map((c) => c.headers.get('authorization'))).toEqual(['Bearer 1', 'Bearer 2']);
  });

  it('rejects bad input with invalid_argument and stores nothing', () => {
    const { outbox, storage } = setup(accepted);
    expect(() => outbox.enqueue('bad id!', 'x')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => outbox.enqueue('conv', 42 as unknown as string)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => outbox.enqueue('conv', 'x'.repeat(70_000))).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(outbox.entries.getSnapshot()).toEqual([]);
    expect(storage.rows.size).toBe(0);
  });

  it('when storage refuses the entry, written rejects, a diagnostic says so, and it is still sent', async () => {
    const { outbox, storage, recorder, acceptedEntries } = setup(accepted);
    storage.failPuts = true;
    const { written } = outbox.enqueue('conv', 'x');
    await expect(written).rejects.toMatchObject({ code: 'storage_quota_exceeded' });
    expect(recorder.of('storage-error').length).toBeGreaterThanOrEqual(1);
    await until(() => acceptedEntries.length === 1, 'sent from memory');
  });
});

/** A `localStorage` stand-in over `saved`. */
function mapJournal(saved: Map<string, string>): NonNullable<OutboxDeps['journal']> {
  return {
    getItem: (key) => saved.get(key) ?? null,
    setItem: (key, value) => void saved.set(key, value),
    removeItem: (key) => void saved.delete(key),
    key: (index) => [...saved.keys()][index] ?? null,
    get length() {
      return saved.size;
    },
  };
}

describe('outbox journal', () => {
  it('a message whose storage write never landed (the page went away right after send) is sent by the next page, once', async () => {
    const saved = new Map<string, string>();
    const journal = mapJournal(saved);
    const storage = createFakeStorage();
    // The first page's write never lands: it is gone before IndexedDB commits.
    const first = createOutbox(
      baseDeps({ storage: { ...storage, putOutbox: () => new Promise<void>(() => undefined) }, fetch: createFakeFetch(accepted), emit: () => undefined, journal }),
    );
    const { operationId } = first.enqueue('conv', 'sent just before a reload');
    first.dispose();
    expect(storage.rows.size).toBe(0);
    expect(saved.size).toBe(1);

    const fetch = createFakeFetch(accepted);
    const recorder = createRecorder();
    // A later page: its entries from before count as left by earlier pages.
    const next = createOutbox(baseDeps({ storage, fetch, emit: recorder.emit, journal, clock: { now: () => performance.now() + 1_000, wallNow: () => Date.now() + 1_000 } }));
    track(next);
    await next.start();
    expect(recorder.of('outbox-replay')[0]?.count).toBe(1);
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    expect(fetch.calls.map((call) => call.key)).toEqual([operationId]);
    expect(saved.size).toBe(0);
  });

  it('keeps a journaled copy until storage holds its entry', async () => {
    const saved = new Map<string, string>();
    const journal = mapJournal(saved);
    const offline = { online: () => false, subscribe: () => () => undefined };
    const hung = { ...createFakeStorage(), putOutbox: () => new Promise<void>(() => undefined) };
    const first = createOutbox(baseDeps({ storage: hung, fetch: createFakeFetch(accepted), emit: () => undefined, journal, network: offline }));
    first.enqueue('conv', 'x');
    first.dispose();
    // The next page cannot write either (quota): the copy stays for the page after it.
    const full = createFakeStorage();
    full.failPuts = true;
    const recorder = createRecorder();
    const next = createOutbox(baseDeps({ storage: full, fetch: createFakeFetch(accepted), emit: recorder.emit, journal, network: offline }));
    track(next);
    await next.start();
    expect(recorder.of('storage-error').map((d) => d.error.code)).toContain('storage_quota_exceeded');
    expect(saved.size).toBe(1);
  });

  it('a corrupt journal entry is reported and removed, other apps\' keys are kept; clear() empties the namespace\'s journal', async () => {
    const saved = new Map<string, string>([
      ['lifeline-outbox:default:garbage', '{not json'],
      ['another-app:key', 'kept'],
    ]);
    const journal = mapJournal(saved);
    const storage = createFakeStorage();
    const recorder = createRecorder();
    const outbox = createOutbox(baseDeps({ storage, fetch: createFakeFetch(() => new Promise<Response>(() => undefined)), emit: recorder.emit, journal, network: { online: () => false, subscribe: () => () => undefined } }));
    track(outbox);
    await outbox.start();
    expect(recorder.of('storage-error').map((d) => [d.error.code, d.error.details])).toEqual([['storage_corrupt_record', { store: 'journal', key: '"garbage"' }]]);
    expect([...saved.keys()]).toEqual(['another-app:key']);
    outbox.enqueue('conv', 'pending');
    expect(saved.size).toBe(2);
    await outbox.clear();
    expect([...saved.keys()]).toEqual(['another-app:key']);
  });
});

describe('outbox (real timers)', () => {
  it("an app's own Content-Type and Idempotency-Key headers are replaced, not sent beside ours", async () => {
    const storage = createFakeStorage();
    const fetch = createFakeFetch(accepted);
    const recorder = createRecorder();
    const outbox = createOutbox(
      baseDeps({ storage, fetch, emit: recorder.emit, headers: { 'Content-Type': 'text/plain', 'Idempotency-Key': 'app-key', Authorization: 'Bearer t' } }),
    );
    track(outbox);
    const { operationId } = outbox.enqueue('conv', 'x');
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    const sent = fetch.calls[0]!.headers;
    expect(sent.get('content-type')).toBe('application/json');
    expect(sent.get('idempotency-key')).toBe(operationId);
    expect(sent.get('authorization')).toBe('Bearer t');
  });

  it('a headers function that never answers times out like a hung request', async () => {
    const storage = createFakeStorage();
    let calls = 0;
    const fetch = createFakeFetch(accepted);
    const recorder = createRecorder();
    const outbox = createOutbox(
      baseDeps({
        storage,
        fetch,
        emit: recorder.emit,
        timeoutMs: 50,
        retry: { initialDelayMs: 1, maxDelayMs: 1 },
        headers: () => (++calls === 1 ? new Promise<Record<string, string>>(() => undefined) : { authorization: 'Bearer fresh' }),
      }),
    );
    track(outbox);
    outbox.enqueue('conv', 'x');
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    expect(recorder.of('retry')[0]?.cause?.code).toBe('timeout');
    expect(fetch.calls.map((c) => c.headers.get('authorization'))).toEqual(['Bearer fresh']);
  });

  it('aborts a request that hangs past timeoutMs and retries it as a timeout', async () => {
    let calls = 0;
    const storage = createFakeStorage();
    const fetch = createFakeFetch(
      (call) =>
        ++calls === 1 ? new Promise<Response>((_, reject) => call.signal.addEventListener('abort', () => reject(call.signal.reason))) : accepted(call),
    );
    const recorder = createRecorder();
    const outbox = createOutbox(baseDeps({ storage, fetch, emit: recorder.emit, timeoutMs: 50, retry: { initialDelayMs: 1, maxDelayMs: 1 } }));
    track(outbox);
    outbox.enqueue('conv', 'x');
    await vi.waitFor(() => expect(recorder.of('accepted')).toHaveLength(1), { timeout: 5_000 });
    expect(recorder.of('retry')[0]?.cause?.code).toBe('timeout');
    expect(fetch.calls[0]?.signal.aborted).toBe(true);
  });
});
