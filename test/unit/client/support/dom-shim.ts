/**
 * `@microsoft/fetch-event-source` 2.0.1 calls `window.clearTimeout` and
 * `document.removeEventListener` when an attempt ends (docs/faults.md: its build touches
 * `window` and `document`). Node has neither; the client never needs more than these
 * no-op stand-ins, which the browser provides for real.
 */
const scope = globalThis as Record<string, unknown>;
scope['window'] ??= {
  setTimeout: (...args: Parameters<typeof setTimeout>) => globalThis.setTimeout(...args),
  clearTimeout: (id: Parameters<typeof clearTimeout>[0]) => globalThis.clearTimeout(id),
};
scope['document'] ??= {
  hidden: false,
  addEventListener: () => {},
  removeEventListener: () => {},
};
export {};
