import { createLifeline, type LifelineOptions } from 'lifeline';
import { LifelineProvider } from 'lifeline/react';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import { labFetch } from './lab-network.js';
import './styles.css';

/**
 * `?stallMs=2000` shortens both stall watchdogs so the fault lab's "stall" recovers
 * quickly (the tests use it); without it the SDK's defaults apply.
 */
function stallFromUrl(): LifelineOptions['stall'] {
  const ms = Number(new URLSearchParams(location.search).get('stallMs'));
  return Number.isFinite(ms) && ms >= 250 ? { firstEventMs: ms, idleMs: ms } : undefined;
}

const stall = stallFromUrl();
const client = createLifeline({ baseUrl: '/api', fetch: labFetch, ...(stall ? { stall } : {}) });
// For poking at it from the devtools console (and for the example's end-to-end tests).
Object.assign(window, { lifeline: client });

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <LifelineProvider client={client}>
      <App />
    </LifelineProvider>
  </StrictMode>,
);
