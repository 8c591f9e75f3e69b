'use client';
/**
 * `lifeline-chat/devtools`: a React panel that shows what the client does (every turn, the outbox,
 * storage, each one's diagnostics) and sets off drills (`client.drill`). Mount it in
 * development: in a production build (`process.env.NODE_ENV === 'production'`, which bundlers
 * replace with a constant) `LifelineDevtools` renders nothing, and the panel's code is dropped
 * by tree-shaking. To ship the panel on purpose, import `lifeline-chat/devtools/production`.
 */
import type { ReactElement } from 'react';
import { LifelineDevtoolsPanel, type LifelineDevtoolsProps } from './panel.js';

export type { LifelineDevtoolsProps } from './panel.js';

/** Renders nothing: what production builds get. */
const Nothing = (_props: LifelineDevtoolsProps): ReactElement | null => null;

/** The panel in development, nothing in production; props on {@link LifelineDevtoolsProps}. */
export const LifelineDevtools: (props: LifelineDevtoolsProps) => ReactElement | null = process.env.NODE_ENV === 'production' ? Nothing : LifelineDevtoolsPanel;
