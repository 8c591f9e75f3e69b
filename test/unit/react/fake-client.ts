/**
 * A small in-memory LifelineClient for the hook tests, built on the real public types.
 * It dedupes `turn(id)` and `conversation(id)` like the real client and counts what a
 * hook could do wrong: handles opened (connections), sends, subscriptions.
 */
import type { MessageContent } from '../../../src/protocol/schemas.js';
import type {
  Conversation,
  ConversationItem,
  ConversationSnapshot,
  Diagnostic,
  DrillKind,
  ExternalStore,
  LifelineClient,
  Outbox,
  OutboxEntry,
  StorageStatus,
  Submission,
  Turn,
  TurnSnapshot,
} from '../../../src/types.js';

export interface WritableStore<S> extends ExternalStore<S> {
  set(next: S): void;
  /** Notifies without changing the snapshot (a store that over-notifies must not cost renders). */
  poke(): void;
  readonly listeners: number;
}

export function writableStore<S>(initial: S): WritableStore<S> {
  let value = initial;
  const listeners = new Set<() => void>();
  return {
    getSnapshot: () => value,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    set(next) {
      value = next;
      for (const listener of [...listeners]) listener();
    },
    poke() {
      for (const listener of [...listeners]) listener();
    },
    get listeners() {
      return listeners.size;
    },
  };
}

export function turnSnapshot(id: string, patch: Partial<TurnSnapshot> = {}): TurnSnapshot {
  return { id, status: 'streaming', text: '', parts: [], actions: [], lastSeq: 0, connection: { state: 'open', attempt: 0 }, ...patch };
}

export function entry(operationId: string, conversationId: string, patch: Partial<OutboxEntry> = {}): OutboxEntry {
  return {
    operationId,
    conversationId,
    content: 'hello',
    createdAt: 0,
    order: 0,
    attempts: 0,
    nextAttemptAt: 0,
    state: 'queued',
    ...patch,
  };
}

export interface FakeTurn extends Turn {
  readonly store: WritableStore<TurnSnapshot>;
}

export interface FakeConversation extends Conversation {
  readonly store: WritableStore<ConversationSnapshot>;
  readonly outboxStore: WritableStore<readonly OutboxEntry[]>;
  readonly sent: MessageContent[];
  readonly retried: string[];
}

export interface FakeClient extends LifelineClient {
  turn(id: string): FakeTurn;
  conversation(id: string): FakeConversation;
  /** Handles created by `turn(id)`: one per id means one connection per id. */
  readonly turnsOpened: Map<string, FakeTurn>;
  readonly conversationsOpened: Map<string, FakeConversation>;
  /** `turns`, writable by the test. */
  readonly turnList: WritableStore<readonly TurnSnapshot[]>;
  /** The snapshot behind `outbox`, writable by the test. */
  readonly outboxEntries: WritableStore<readonly OutboxEntry[]>;
  /** Every `drill(turnId, drill)` call, in order (each answers true). */
  readonly drills: [string, DrillKind][];
  readonly turnCalls: number;
  readonly conversationCalls: number;
  emit(diagnostic: Diagnostic): void;
  readonly storage: WritableStore<StorageStatus>;
  readonly diagnosticListeners: number;
}

const never = new Promise<never>(() => {});

function fakeTurn(id: string): FakeTurn {
  const store = writableStore(turnSnapshot(id));
  return {
    id,
    store,
    getSnapshot: store.getSnapshot,
    subscribe: store.subscribe,
    completed: never,
    cancel: async () => {},
    close: () => {},
    async *[Symbol.asyncIterator]() {},
  };
}

function fakeOutbox(store: WritableStore<readonly OutboxEntry[]>, retried: string[]): Outbox {
  return {
    getSnapshot: store.getSnapshot,
    subscribe: store.subscribe,
    retry: async (operationId) => void retried.push(operationId),
    discard: async (operationId) => store.set(store.getSnapshot().filter((e) => e.operationId !== operationId)),
  };
}

function fakeConversation(id: string): FakeConversation {
  const store = writableStore<ConversationSnapshot>({ id, items: [] });
  const outboxStore = writableStore<readonly OutboxEntry[]>([]);
  const sent: MessageContent[] = [];
  const retried: string[] = [];
  return {
    id,
    ready: Promise.resolve(),
    store,
    outboxStore,
    sent,
    retried,
    getSnapshot: store.getSnapshot,
    subscribe: store.subscribe,
    outbox: fakeOutbox(outboxStore, retried),
    send(content) {
      sent.push(content);
      const operationId = `op-${sent.length}`;
      const queued = entry(operationId, id, { content });
      const item: ConversationItem = { role: 'user', key: operationId, content, submission: queued };
      store.set({ id, items: [...store.getSnapshot().items, item] });
      const submission: Submission = {
        operationId,
        accepted: never,
        getSnapshot: () => queued,
        subscribe: () => () => {},
      };
      return submission;
    },
    resend(turnId) {
      throw new Error(`fake conversation: resend(${turnId}) is not scripted`);
    },
  };
}

export function createFakeClient(): FakeClient {
  const turnsOpened = new Map<string, FakeTurn>();
  const conversationsOpened = new Map<string, FakeConversation>();
  const diagnosticListeners = new Set<(d: Diagnostic) => void>();
  const storage = writableStore<StorageStatus>({ state: 'opening', kind: 'memory' });
  const outboxStore = writableStore<readonly OutboxEntry[]>([]);
  const drills: [string, DrillKind][] = [];
  const turnList = writableStore<readonly TurnSnapshot[]>([]);
  let turnCalls = 0;
  let conversationCalls = 0;
  return {
    turnsOpened,
    conversationsOpened,
    get turnCalls() {
      return turnCalls;
    },
    get conversationCalls() {
      return conversationCalls;
    },
    get diagnosticListeners() {
      return diagnosticListeners.size;
    },
    storage,
    turn(id) {
      turnCalls += 1;
      let turn = turnsOpened.get(id);
      if (!turn) turnsOpened.set(id, (turn = fakeTurn(id)));
      return turn;
    },
    conversation(id) {
      conversationCalls += 1;
      let conversation = conversationsOpened.get(id);
      if (!conversation) conversationsOpened.set(id, (conversation = fakeConversation(id)));
      return conversation;
    },
    turns: turnList,
    turnList,
    outboxEntries: outboxStore,
    outbox: fakeOutbox(outboxStore, []),
    diagnostics: {
      subscribe(listener) {
        diagnosticListeners.add(listener);
        return () => diagnosticListeners.delete(listener);
      },
    },
    emit(diagnostic) {
      for (const listener of [...diagnosticListeners]) listener(diagnostic);
    },
    storageStatus: storage,
    recover: async () => [],
    drills,
    drill(turnId, drill) {
      drills.push([turnId, drill]);
      return true;
    },
    ready: Promise.resolve(),
    clearStorage: async () => {},
    dispose: () => {},
  };
}
