import { createChatTransport } from 'lifeline-chat/ai-sdk';
import { LifelineProvider } from 'lifeline-chat/react';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { AiApp } from './ai-app.js';
import { createExampleClient } from './example-client.js';
import './styles.css';

const client = createExampleClient();
// One transport per client: it remembers which turns it already handed to useChat.
const transport = createChatTransport(client, { onError: (error) => console.warn('[lifeline-chat/ai-sdk]', error) });

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <LifelineProvider client={client}>
      <AiApp transport={transport} />
    </LifelineProvider>
  </StrictMode>,
);
