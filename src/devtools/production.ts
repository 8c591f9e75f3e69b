'use client';
/** `lifeline-chat/devtools/production`: the devtools panel in every build, production included (see `lifeline-chat/devtools`). */
export { LifelineDevtoolsPanel as LifelineDevtools } from './panel.js';
export type { LifelineDevtoolsProps } from './panel.js';
