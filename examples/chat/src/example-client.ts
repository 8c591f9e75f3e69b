import { createLifeline, type LifelineClient, type LifelineOptions } from 'lifeline';
import { labFetch } from './lab-network.js';

/**
 * `?stallMs=2000` shortens both stall watchdogs so the fault lab's "stall" recovers
 * quickly (the tests use it); without it the SDK's defaults apply.
 */
function stallFromUrl(): LifelineOptions['stall'] {
  const ms = Number(new URLSearchParams(location.search).get('stallMs'));
  return Number.isFinite(ms) && ms >= 250 ? { firstEventMs: ms, idleMs: ms } : undefined;
}

/** The client both pages use: the API on this origin, through the fault lab's network switch. */
export function createExampleClient(): LifelineClient {
  const stall = stallFromUrl();
  const client = createLifeline({ baseUrl: '/api', fetch: labFetch, ...(stall ? { stall } : {}) });
  // For poking at it from the devtools console (and for the example's end-to-end tests).
  Object.assign(window, { lifeline: client });
  return client;
}
