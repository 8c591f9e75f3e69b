import { LifelineProvider } from 'lifeline-chat/react';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import { createExampleClient } from './example-client.js';
import './styles.css';

const client = createExampleClient();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <LifelineProvider client={client}>
      <App />
    </LifelineProvider>
  </StrictMode>,
);
