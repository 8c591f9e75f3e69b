/**
 * What the AI page sends beside each message it sends or regenerates (`useChat`'s per-request
 * data): `body` and `metadata` travel as the submission's `context`, the header as a header of
 * its submit request (docs/protocol.md §1). The tools model repeats them when greeted ("Hello"),
 * so the page shows that the agent got them. Continuations (a tool's answer) carry none: useChat
 * sends them by itself.
 */
export const REQUEST_DATA = {
  body: { model: 'mock-tools' },
  metadata: { page: 'ai' },
  headers: { 'x-example-tier': 'demo' },
} as const;

/** The cities the `locate` client tool can answer with. */
export const CITIES = ['Bergen', 'Oslo', 'Tromsø'] as const;
