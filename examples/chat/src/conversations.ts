/** The sidebar's conversation list: ids and titles kept in localStorage, the current one in `?c=`. */
export interface ConversationMeta {
  id: string;
  title: string;
}

const KEY = 'lifeline-example:conversations';
const ID = /^[A-Za-z0-9_-]{1,128}$/;

export function newConversationId(): string {
  return `c-${crypto.randomUUID().slice(0, 8)}`;
}

export function loadConversations(): ConversationMeta[] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(KEY) ?? '[]');
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (c): c is ConversationMeta => typeof c === 'object' && c !== null && ID.test(String(c.id)) && typeof c.title === 'string',
    );
  } catch {
    return [];
  }
}

export function saveConversations(list: readonly ConversationMeta[]): void {
  try {
    localStorage.setItem(KEY, JSON.stringify(list));
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
