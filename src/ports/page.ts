/**
 * What the page tells the client about itself: going away (`pagehide`, a visibility
 * change), coming back from a freeze (`resume`), whether it is shown (notifications wait
 * for an animation frame only then), and whether it is a browser document at all.
 */
export interface Page {
  /** A document exists: only a browser page follows streams (a server render must not open them). */
  isBrowser(): boolean;
  /** The page is visible and has animation frames. */
  visible(): boolean;
  /** Calls `callback` at the next animation frame (only asked while {@link visible}). */
  frame(callback: () => void): void;
  /** Calls `listener` when the page may be going away (`pagehide`, any visibility change) until `signal` aborts. */
  onHide(listener: () => void, signal: AbortSignal): void;
  /** Calls `listener` when the page resumes from a freeze, until `signal` aborts. */
  onResume(listener: () => void, signal: AbortSignal): void;
}

/** The global `document` and `window` events, looked up on every call (SSR-safe). */
export const realPage: Page = {
  isBrowser: () => typeof document !== 'undefined',
  visible: () => globalThis.document?.visibilityState === 'visible' && 'requestAnimationFrame' in globalThis,
  frame: (callback) => void requestAnimationFrame(() => callback()),
  onHide(listener, signal) {
    // Flushing on any visibility change is harmless; the one that matters is to `hidden`.
    globalThis.addEventListener?.('pagehide', listener, { signal });
    globalThis.document?.addEventListener('visibilitychange', listener, { signal });
  },
  onResume(listener, signal) {
    globalThis.document?.addEventListener('resume', listener, { signal });
  },
};
