import { createChatTransport } from 'lifeline/ai-sdk';
import { LifelineProvider } from 'lifeline/react';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { AiApp } from './ai-app.js';
import { createExampleClient } from './example-client.js';
import './styles.css';

const client = createExampleClient();
// One transport per client: it remembers which turns it already handed to useChat.
const transport = createChatTransport(client, { onError: (error) => console.warn('[lifeline/ai-sdk]', error) });

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <LifelineProvider client={client}>
      <AiApp transport={transport} />
    </LifelineProvider>
  </StrictMode>,
);
