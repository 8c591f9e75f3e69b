/**
 * Which turn of a chat this browser last delivered to a finished `useChat` stream, so a
 * reloaded page resumes only what it has not shown yet. Kept in `localStorage` (shared by
 * the tabs of the origin, surviving reloads); in memory where there is none.
 */
import { realStorage } from '../ports/storage.js';

export interface DeliveredMarks {
  get(chatId: string): string | undefined;
  set(chatId: string, turnId: string): void;
}

export function createDeliveredMarks(prefix: string): DeliveredMarks {
  const memory = new Map<string, string>();
  // Looked up on every use (SSR-safe); undefined where the page may not use it (blocked cookies).
  const storage = realStorage.pageStorage;
  return {
    get(chatId) {
      try {
        return storage()?.getItem(prefix + chatId) ?? memory.get(chatId);
      } catch {
        return memory.get(chatId);
      }
    },
    set(chatId, turnId) {
      memory.set(chatId, turnId);
      try {
        storage()?.setItem(prefix + chatId, turnId);
      } catch {
        // Quota or a blocked store: the mark lives in memory for this page.
      }
    },
  };
}
