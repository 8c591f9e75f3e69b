'use client';
/**
 * The panel's look, as inline styles: nothing to import or load and nothing that leaks into the
 * app's own CSS. The root sets what it inherits (font, colour, alignment); an app may size
 * or place it with `[data-lifeline-devtools]`.
 */
import type { CSSProperties } from 'react';
import type { TurnStatus } from '../types.js';
import type { Tone } from './describe.js';

export const colors = { bg: '#0f172a', panel: '#111c33', line: '#23314f', text: '#e2e8f0', muted: '#8da2c0', accent: '#7dd3fc' } as const;

export const TONES: Record<Tone, string> = { info: colors.muted, good: '#4ade80', warn: '#fbbf24', bad: '#f87171' };

export const STATUS_TONES: Record<TurnStatus, Tone> = {
  pending: 'info',
  streaming: 'good',
  reconnecting: 'warn',
  stalled: 'warn',
  recovering: 'warn',
  complete: 'good',
  failed: 'bad',
  cancelled: 'info',
};

export const root: CSSProperties = {
  display: 'flex',
  textAlign: 'left',
  letterSpacing: 'normal',
  flexDirection: 'column',
  gap: 10,
  boxSizing: 'border-box',
  background: colors.bg,
  color: colors.text,
  font: '12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
  border: `1px solid ${colors.line}`,
  borderRadius: 8,
  padding: 10,
  overflow: 'auto',
};

export const floating: CSSProperties = { position: 'fixed', right: 12, bottom: 12, width: 'min(560px, calc(100vw - 24px))', maxHeight: '70vh', zIndex: 2147483000, boxShadow: '0 10px 30px rgba(0,0,0,.35)' };

export const toggle: CSSProperties = {
  all: 'initial',
  position: 'fixed',
  right: 12,
  bottom: 12,
  zIndex: 2147483000,
  cursor: 'pointer',
  background: colors.bg,
  color: colors.accent,
  font: '600 12px ui-monospace, Menlo, monospace',
  border: `1px solid ${colors.line}`,
  borderRadius: 999,
  padding: '6px 12px',
};

export const heading: CSSProperties = { margin: 0, font: 'inherit', fontWeight: 700, color: colors.accent, textTransform: 'uppercase', letterSpacing: '.06em', fontSize: 11 };

export const section: CSSProperties = { display: 'flex', flexDirection: 'column', gap: 6, borderTop: `1px solid ${colors.line}`, paddingTop: 8 };

export const table: CSSProperties = { width: '100%', borderCollapse: 'collapse', font: 'inherit', color: 'inherit' };

export const cell: CSSProperties = { padding: '3px 6px', textAlign: 'left', borderBottom: `1px solid ${colors.line}`, whiteSpace: 'nowrap' };

export const headCell: CSSProperties = { ...cell, color: colors.muted, fontWeight: 400 };

export const button: CSSProperties = {
  font: 'inherit',
  color: colors.text,
  background: colors.panel,
  border: `1px solid ${colors.line}`,
  borderRadius: 5,
  padding: '3px 9px',
  cursor: 'pointer',
};

export const muted: CSSProperties = { color: colors.muted };

export const log: CSSProperties = { listStyle: 'none', margin: 0, padding: 0, maxHeight: 180, overflow: 'auto', display: 'flex', flexDirection: 'column' };

export const pill = (tone: Tone): CSSProperties => ({ color: TONES[tone], border: `1px solid ${TONES[tone]}55`, borderRadius: 999, padding: '0 7px' });
