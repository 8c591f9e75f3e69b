import type { EventPage } from '../log/turn-log.js';

/** Most serialised event data the cache keeps, in UTF-16 units of JSON. */
const CACHE_CHARS = 8 * 1024 * 1024;
/** A page larger than this is served but not kept: one huge turn must not push out every other. */
const ENTRY_CHARS = 1024 * 1024;

/** A replay page of an ended turn, its events already serialised. */
export interface CachedPage {
  eventsJson: string;
  hasMore: boolean;
}

/**
 * Replay pages of ended turns, their events serialised once: an ended turn's log no
 * longer changes, so every replay of it (a client rebuilding after a mismatch, devices
 * catching up, a retry) is answered without reading the log or serialising its events
 * again. Only the events are kept; the turn's record is read each time, so visibility,
 * expiry and its delivery state are as fresh as without the cache. Least recently used
 * pages go first beyond CACHE_CHARS.
 */
export class ReplayCache {
  readonly #pages = new Map<string, CachedPage>();
  #chars = 0;

  get(turnId: string, after: number, limit: number): CachedPage | undefined {
    const key = `${turnId} ${after} ${limit}`;
    const page = this.#pages.get(key);
    if (page === undefined) return undefined;
    // Map order is the eviction order: a hit moves to the back.
    this.#pages.delete(key);
    this.#pages.set(key, page);
    return page;
  }

  /** Serialises `page` and keeps it when small enough; answers the serialised page either way. */
  put(turnId: string, after: number, limit: number, page: EventPage): CachedPage {
    const cached: CachedPage = { eventsJson: JSON.stringify(page.events), hasMore: page.hasMore };
    const size = cached.eventsJson.length;
    if (size > ENTRY_CHARS) return cached;
    const key = `${turnId} ${after} ${limit}`;
    const previous = this.#pages.get(key);
    if (previous !== undefined) {
      this.#pages.delete(key);
      this.#chars -= previous.eventsJson.length;
    }
    this.#pages.set(key, cached);
    this.#chars += size;
    for (const [oldest, evicted] of this.#pages) {
      if (this.#chars <= CACHE_CHARS) break;
      this.#pages.delete(oldest);
      this.#chars -= evicted.eventsJson.length;
    }
    return cached;
  }
}
