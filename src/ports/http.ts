/** The client's network requests: `fetch`, the app's own (`options.fetch`) or the platform's. */
export interface Http {
  fetch: typeof fetch;
}

/** `globalThis.fetch`, looked up on every request (SSR-safe; a test's stub applies). */
export const realHttp: Http = { fetch: (input, init) => globalThis.fetch(input, init) };
