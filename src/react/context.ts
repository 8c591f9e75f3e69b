'use client';
import { createContext, createElement, useContext, type ReactNode } from 'react';
import { LifelineError } from '../errors.js';
import type { LifelineClient } from '../types.js';

const LifelineContext = createContext<LifelineClient | null>(null);

/** Props of {@link LifelineProvider}. */
export interface LifelineProviderProps {
  /** The client from `createLifeline`; create it once, outside render (or in `useState(() => …)`). */
  client: LifelineClient;
  children?: ReactNode;
}

/**
 * Makes a Lifeline client available to the hooks below it. It never creates, opens or
 * disposes the client: its lifetime is the app's, so a StrictMode double mount cannot
 * open a second connection.
 */
export function LifelineProvider({ client, children }: LifelineProviderProps): ReactNode {
  return createElement(LifelineContext.Provider, { value: client }, children);
}

/**
 * The client of the nearest {@link LifelineProvider}.
 * @throws LifelineError `invalid_argument` outside a provider (a wiring bug, not a runtime condition).
 */
export function useLifeline(): LifelineClient {
  const client = useContext(LifelineContext);
  if (!client) throw new LifelineError('invalid_argument', 'useLifeline() needs a <LifelineProvider client={…}> above it.');
  return client;
}
