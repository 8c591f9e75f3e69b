/**
 * Renders the client's state machines, from their tables in `src/`, into the sections of
 * docs/architecture.md between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`.
 * `npm run docs:tables` writes them; test/unit/scripts/machine-tables.test.ts fails when the
 * doc differs from what the code says, so the doc cannot drift.
 */
import { BOOT_TABLE } from '../src/client/boot.js';
import { INPUT_KEYS, PHASES, ruleFor, type Target } from '../src/core/follow-machine.js';
import { GUARD_TABLE } from '../src/storage/guarded-store.js';
import { BUFFER_TABLE, bufferStep, type BufferInput, type BufferPhase } from '../src/storage/write-buffer.js';
import { SHARE_TABLE } from '../src/tabs/turn-share.js';

/** One rendered section: its marker name and its Markdown. */
export interface Section {
  name: string;
  markdown: string;
}

const cell = (to: readonly Target[] | undefined): string => (to === undefined ? '·' : to.map((target) => (target === '=' || target === 'next' ? target : `\`${target}\``)).join(' / '));

/** The follower's phase × input table: where each input may lead in each phase. */
export function followerTable(): string {
  const head = `| input | ${PHASES.map((phase) => `\`${phase}\``).join(' | ')} |`;
  const rule = `|---|${PHASES.map(() => '---').join('|')}|`;
  const rows = INPUT_KEYS.map((key) => `| ${key} | ${PHASES.map((phase) => cell(ruleFor(phase, key)?.to)).join(' | ')} |`);
  return [head, rule, ...rows].join('\n');
}

/** A small machine given as `state → event → next states` rows. */
export interface MachineTable {
  readonly states: readonly string[];
  readonly events: readonly string[];
  /** The states each event may lead to from each state; absent: the event means nothing there. */
  readonly to: (state: string, event: string) => readonly string[] | undefined;
}

/** `from` × `event` for a small machine: its states as rows (they are few), its events as columns. */
export function machineTable({ states, events, to }: MachineTable): string {
  const head = `| state | ${events.map((event) => `${event}`).join(' | ')} |`;
  const rule = `|---|${events.map(() => '---').join('|')}|`;
  const rows = states.map((state) => `| \`${state}\` | ${events.map((event) => { const next = to(state, event); return next === undefined ? '·' : next.map((n) => `\`${n}\``).join(' / '); }).join(' | ')} |`);
  return [head, rule, ...rows].join('\n');
}

/** A `{ state: { event: next } }` table (next: one state or several) as a {@link MachineTable}. */
function fromTable(table: Readonly<Record<string, Readonly<Record<string, string | readonly string[] | undefined>>>>, events: readonly string[]): MachineTable {
  return {
    states: Object.keys(table),
    events,
    to: (state, event) => {
      const next = table[state]?.[event];
      return next === undefined ? undefined : typeof next === 'string' ? [next] : next;
    },
  };
}

/** The write buffer's table: a rule that reads the backlog shows every phase it picks. */
function bufferTable(): MachineTable {
  return {
    states: Object.keys(BUFFER_TABLE),
    events: ['event', 'timer', 'written', 'flush', 'stop'],
    to(state, input) {
      const picked = ([0, 1, 2] as const).map((backlog) => bufferStep(state as BufferPhase, input as BufferInput, backlog));
      return picked[0] === undefined ? undefined : [...new Set(picked as BufferPhase[])];
    },
  };
}

export function sections(): Section[] {
  return [
    { name: 'follower', markdown: followerTable() },
    { name: 'follower-boot', markdown: machineTable(fromTable(BOOT_TABLE, ['restore', 'boot', 'read', 'drop', 'start'])) },
    { name: 'storage-guard', markdown: machineTable(fromTable(GUARD_TABLE, ['opened', 'failed'])) },
    { name: 'tab-share', markdown: machineTable(fromTable(SHARE_TABLE, ['lock', 'batch', 'leave'])) },
    { name: 'write-buffer', markdown: machineTable(bufferTable()) },
  ];
}

/** `doc` with every section replaced by its rendering; throws when a marker is missing. */
export function renderInto(doc: string, rendered: readonly Section[] = sections()): string {
  let out = doc;
  for (const { name, markdown } of rendered) {
    const begin = `<!-- generated:${name} -->`;
    const end = `<!-- /generated:${name} -->`;
    const from = out.indexOf(begin);
    const to = out.indexOf(end);
    if (from === -1 || to < from) throw new Error(`docs/architecture.md lacks the ${begin} … ${end} markers.`);
    out = `${out.slice(0, from + begin.length)}\n${markdown}\n${out.slice(to)}`;
  }
  return out;
}
