/**
 * The sidebar's conversation list: ids and titles kept in localStorage (one list per page),
 * the current one in `?c=`.
 */
import { useCallback, useState } from 'react';

export interface ConversationMeta {
  id: string;
  title: string;
}

/** Where a page keeps its list, and how its new conversation ids start. */
export interface ConversationListKind {
  storageKey: string;
  idPrefix: string;
}

export const HOOKS_CONVERSATIONS: ConversationListKind = { storageKey: 'lifeline-example:conversations', idPrefix: 'c' };
export const AI_CONVERSATIONS: ConversationListKind = { storageKey: 'lifeline-example:ai-conversations', idPrefix: 'ai' };

const ID = /^[A-Za-z0-9_-]{1,128}$/;
const UNTITLED = 'New conversation';

export function newConversationId(kind: ConversationListKind = HOOKS_CONVERSATIONS): string {
  return `${kind.idPrefix}-${crypto.randomUUID().slice(0, 8)}`;
}

export function loadConversations(kind: ConversationListKind = HOOKS_CONVERSATIONS): ConversationMeta[] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(kind.storageKey) ?? '[]');
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (c): c is ConversationMeta => typeof c === 'object' && c !== null && ID.test(String(c.id)) && typeof c.title === 'string',
    );
  } catch {
    return [];
  }
}

export function saveConversations(list: readonly ConversationMeta[], kind: ConversationListKind = HOOKS_CONVERSATIONS): void {
  try {
    localStorage.setItem(kind.storageKey, JSON.stringify(list));
  } catch {
    // A full or blocked localStorage only costs the sidebar its memory.
  }
}

/** The conversation named in the URL, if it is a valid id. */
export function conversationFromUrl(): string | undefined {
  const id = new URLSearchParams(location.search).get('c');
  return id !== null && ID.test(id) ? id : undefined;
}

/** Puts the current conversation in the URL, keeping other parameters (e.g. `stallMs`). */
export function showInUrl(id: string): void {
  const url = new URL(location.href);
  url.searchParams.set('c', id);
  history.replaceState(null, '', url);
}

function initialConversations(kind: ConversationListKind): { list: ConversationMeta[]; current: string } {
  const list = loadConversations(kind);
  const current = conversationFromUrl() ?? list[0]?.id ?? newConversationId(kind);
  if (!list.some((c) => c.id === current)) list.unshift({ id: current, title: UNTITLED });
  saveConversations(list, kind);
  showInUrl(current);
  return { list, current };
}

/** The list and the current conversation, with the sidebar's actions. */
export function useConversationList(kind: ConversationListKind) {
  const [{ list, current }, setState] = useState(() => initialConversations(kind));

  const select = useCallback((id: string) => {
    showInUrl(id);
    setState((s) => ({ ...s, current: id }));
  }, []);

  const create = useCallback(() => {
    const id = newConversationId(kind);
    setState((s) => {
      const next = [{ id, title: UNTITLED }, ...s.list];
      saveConversations(next, kind);
      return { list: next, current: id };
    });
    showInUrl(id);
  }, [kind]);

  /** The first message names the conversation in the sidebar. */
  const titleFrom = useCallback(
    (text: string) =>
      setState((s) => {
        const next = s.list.map((c) => (c.id === s.current && c.title === UNTITLED ? { ...c, title: text.slice(0, 48) } : c));
        saveConversations(next, kind);
        return { ...s, list: next };
      }),
    [kind],
  );

  return { list, current, select, create, titleFrom };
}
