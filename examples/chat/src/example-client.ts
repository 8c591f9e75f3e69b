import { createLifeline, type LifelineClient, type LifelineOptions } from 'lifeline-chat';
import { principalHeaders, userFromUrl } from './example-config.js';
import { labFetch } from './lab-network.js';

/**
 * `?stallMs=2000` shortens both stall watchdogs so the fault lab's "stall" recovers
 * quickly (the tests use it); without it the SDK's defaults apply.
 */
function stallFromUrl(): LifelineOptions['stall'] {
  const ms = Number(new URLSearchParams(location.search).get('stallMs'));
  return Number.isFinite(ms) && ms >= 250 ? { firstEventMs: ms, idleMs: ms } : undefined;
}

/**
 * The client both pages use: the API on this origin, through the fault lab's network switch.
 * `?user=` (with the server's PRINCIPAL_HEADER) names the principal, and is only asked for
 * when the URL has it, so the default page sends no extra request.
 */
export function createExampleClient(): LifelineClient {
  const stall = stallFromUrl();
  // Read once: the page's user does not change while it runs.
  const user = userFromUrl();
  const headers = user === undefined ? {} : { headers: () => principalHeaders(user) };
  const client = createLifeline({ baseUrl: '/api', fetch: labFetch, ...headers, ...(stall ? { stall } : {}) });
  // For poking at it from the devtools console (and for the example's end-to-end tests).
  Object.assign(window, { lifeline: client });
  return client;
}
