import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { SupportApp } from './support-app.js';
import './styles.css';
import './support.css';

// No Lifeline client here: the page speaks the operator API with plain fetch (support-api.ts).
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <SupportApp />
  </StrictMode>,
);
