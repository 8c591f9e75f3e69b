/**
 * When subscribers hear of changes: at most once per animation frame while the page is
 * visible, else once per microtask. A hidden page gets no frames: hiding it delivers what
 * waits for one at once ({@link runFramed} from the `visibilitychange` listener), so
 * subscribers of a background tab still hear.
 */

/** Notifications waiting for the next animation frame. */
const framed: (() => void)[] = [];

/** Runs every notification waiting for a frame, now. */
export const runFramed = (): void => framed.splice(0).forEach((callback) => callback());

/** Schedules `callback` for the next frame (visible page) or microtask (otherwise). */
export function notificationScheduler(callback: () => void): void {
  if (globalThis.document?.visibilityState === 'visible' && 'requestAnimationFrame' in globalThis) {
    if (!framed.length) requestAnimationFrame(runFramed);
    framed.push(callback);
  } else queueMicrotask(callback);
}
