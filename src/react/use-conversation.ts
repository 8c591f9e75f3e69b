'use client';
import { useCallback, useMemo, useSyncExternalStore } from 'react';
import { isEnded } from '../core/domain.js';
import { createBrowserNetworkMonitor } from '../ports/network.js';
import type { MessageContent } from '../protocol/schemas.js';
import type { Conversation, ConversationItem, ConversationSnapshot, ExternalStore, LifelineClient, Outbox, OutboxEntry, Submission } from '../types.js';
import { useLifeline } from './context.js';
import { lazyStore, useLazy } from './store.js';

/**
 * One word for a conversation's connection badge, most urgent first:
 * - `offline`: the browser is offline (as the client last reported it), or a live turn waits for the network;
 * - `failed`: a submission failed for good and needs Retry or discard;
 * - `recovering`: missing events are being fetched back (resume or replay);
 * - `reconnecting`: a stream dropped or stalled and a reconnect is scheduled or under way;
 * - `sending`: a submission is queued or in flight, or an accepted turn has produced nothing yet;
 * - `streaming`: an answer is arriving;
 * - `online`: nothing in flight.
 */
export type ConversationStatus = 'offline' | 'failed' | 'recovering' | 'reconnecting' | 'sending' | 'streaming' | 'online';

/** Ranked least to most urgent, so the summary is one max over items. */
const RANK: readonly ConversationStatus[] = ['online', 'streaming', 'sending', 'reconnecting', 'recovering', 'failed', 'offline'];

function itemStatus(item: ConversationItem): ConversationStatus {
  const turn = item.turn;
  if (turn) {
    if (turn.connection.state === 'offline' && !isEnded(turn.status)) return 'offline';
    switch (turn.status) {
      case 'recovering':
        return 'recovering';
      case 'reconnecting':
      case 'stalled':
        return 'reconnecting';
      case 'pending':
        return 'sending';
      case 'streaming':
        return 'streaming';
      default:
        return 'online';
    }
  }
  return entryStatus(item.submission);
}

function entryStatus(entry: OutboxEntry | undefined): ConversationStatus {
  if (!entry || entry.state === 'accepted') return 'online';
  return entry.state === 'failed' ? 'failed' : 'sending';
}

/** Summarises a conversation's items and outbox entries into one {@link ConversationStatus}. */
export function conversationStatus(items: readonly ConversationItem[], outbox: readonly OutboxEntry[]): ConversationStatus {
  let rank = 0;
  for (const item of items) rank = Math.max(rank, RANK.indexOf(itemStatus(item)));
  for (const entry of outbox) rank = Math.max(rank, RANK.indexOf(entryStatus(entry)));
  return RANK[rank] ?? 'online';
}

/** What {@link useConversation} returns. */
export interface UseConversationResult {
  /** User messages and assistant turns interleaved in order, each with its snapshot. Empty until mounted (and on the server). */
  messages: readonly ConversationItem[];
  /** Sends a message: stored durably first, then submitted (and retried) by the outbox. Call it from event handlers. */
  send: (content: MessageContent) => Submission;
  /** Sends the message that started a (failed) turn again as a new submission; see `Conversation.resend`. */
  resend: (turnId: string) => Submission;
  /** This conversation's pending and failed submissions. */
  outbox: readonly OutboxEntry[];
  /** Sends a failed submission again with the same operation id. */
  retry: (operationId: string) => Promise<void>;
  /** Drops a submission that the server has not accepted. */
  discard: (operationId: string) => Promise<void>;
  /** A summary for a connection badge. */
  status: ConversationStatus;
}

const EMPTY: readonly never[] = [];
const online = (): boolean => true;

/** The page's online state (the real network port; a hook has only the client). */
const browserNetwork = createBrowserNetworkMonitor();

/**
 * Online as the client reports it (`network` diagnostics). The starting value is read on
 * subscribe, which only happens in a browser after commit, never on the server.
 */
function networkStore(client: LifelineClient): ExternalStore<boolean> {
  let isOnline = true;
  return {
    subscribe(onChange) {
      isOnline = browserNetwork.online();
      return client.diagnostics.subscribe((d) => {
        if (d.type !== 'network' || d.online === isOnline) return;
        isOnline = d.online;
        onChange();
      });
    },
    getSnapshot: () => isOnline,
  };
}

/**
 * Reads and writes one conversation. Re-renders only when its snapshot or its outbox
 * changes. The conversation handle is taken on first subscribe (never during render),
 * and the hook itself never sends or connects, so StrictMode's double mount is harmless.
 */
export function useConversation(conversationId: string): UseConversationResult {
  const client = useLifeline();
  const store = useMemo(
    () => lazyStore<Conversation, ConversationSnapshot>(() => client.conversation(conversationId)),
    [client, conversationId],
  );
  const outboxStore = useMemo(() => lazyStore<Outbox, readonly OutboxEntry[]>(() => store.get().outbox), [store]);
  const messages = useLazy(store)?.items ?? EMPTY;
  const outbox = useLazy(outboxStore) ?? EMPTY;
  const network = useMemo(() => networkStore(client), [client]);
  const isOnline = useSyncExternalStore(network.subscribe, network.getSnapshot, online);
  const status = useMemo(() => (isOnline ? conversationStatus(messages, outbox) : 'offline'), [isOnline, messages, outbox]);
  const send = useCallback((content: MessageContent) => store.get().send(content), [store]);
  const resend = useCallback((turnId: string) => store.get().resend(turnId), [store]);
  const retry = useCallback((operationId: string) => outboxStore.get().retry(operationId), [outboxStore]);
  const discard = useCallback((operationId: string) => outboxStore.get().discard(operationId), [outboxStore]);
  return { messages, send, resend, outbox, retry, discard, status };
}
