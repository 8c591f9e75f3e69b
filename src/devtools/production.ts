'use client';
/** `lifeline/devtools/production`: the devtools panel in every build, production included (see `lifeline/devtools`). */
export { LifelineDevtoolsPanel as LifelineDevtools } from './panel.js';
export type { LifelineDevtoolsProps } from './panel.js';
