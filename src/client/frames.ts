/**
 * When subscribers hear of changes: at most once per animation frame while the page is
 * visible, else once per microtask. A hidden page gets no frames: hiding it delivers what
 * waits for one at once ({@link Frames.runFramed} from the page's hide signal), so
 * subscribers of a background tab still hear.
 */
import type { Page } from '../ports/page.js';

export interface Frames {
  /** Schedules `callback` for the next frame (visible page) or microtask (otherwise). */
  schedule(callback: () => void): void;
  /** Runs every notification waiting for a frame, now. */
  runFramed(): void;
}

export function createFrames(page: Page): Frames {
  /** Notifications waiting for the next animation frame. */
  const framed: (() => void)[] = [];
  const runFramed = (): void => framed.splice(0).forEach((callback) => callback());
  return {
    runFramed,
    schedule(callback) {
      if (page.visible()) {
        if (!framed.length) page.frame(runFramed);
        framed.push(callback);
      } else queueMicrotask(callback);
    },
  };
}
