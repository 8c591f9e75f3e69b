/**
 * Node has no `document`: the client then takes itself for a server render and follows no
 * stream (`page.isBrowser()`, a server render must not open one). This no-op stand-in makes
 * the tests a browser page as far as the client asks (the page port's listeners included).
 */
const scope = globalThis as Record<string, unknown>;
scope['document'] ??= {
  hidden: false,
  addEventListener: () => {},
  removeEventListener: () => {},
};
export {};
