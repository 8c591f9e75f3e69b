/** The soak's printable table: faults scheduled and injected, every oracle's count, the problems, the verdict line. */
import type { InjectorLog } from './injector.js';
import { FAULT_KINDS, type FaultKind } from './schedule.js';
import type { SoakTotals } from './verdict.js';

/** The run's identity as the table's first line says it. */
export interface RunLabel {
  seed: number;
  turns: number;
  faults: number;
}

export function soakReport(r: {
  options: RunLabel;
  hash: string;
  faults: Map<FaultKind, { scheduled: number; fired: number }>;
  recoveries: Record<string, number>;
  totals: SoakTotals;
  passed: boolean;
  durationMs: number;
  networkMessages: number;
  stats: InjectorLog;
  clientDiagnostics: Map<string, { count: number; examples: string[] }>;
  problems: string[];
}): string {
  const t = r.totals;
  let scheduled = 0;
  let fired = 0;
  const rows = FAULT_KINDS.map((kind) => {
    const count = r.faults.get(kind) ?? { scheduled: 0, fired: 0 };
    scheduled += count.scheduled;
    fired += count.fired;
    return `| ${kind} | ${count.scheduled} | ${count.fired} |`;
  });
  const lines = [
    `seed ${r.options.seed} · turns ${r.options.turns} · faults ${r.options.faults} · schedule ${r.hash} · ${(r.durationMs / 1000).toFixed(0)} s`,
    '',
    '| fault | scheduled | injected |',
    '|---|---:|---:|',
    ...rows,
    `| **total** | **${scheduled}** | **${fired}** |`,
    '',
    '| check | count |',
    '|---|---:|',
    `| turns completed / submitted | ${t.completed} / ${t.turns} |`,
    `| turns failed / stuck | ${t.failedTurns} / ${t.stuck} |`,
    `| recoveries: resume / replay / reload | ${r.recoveries['resume'] ?? 0} / ${r.recoveries['replay'] ?? 0} / ${r.recoveries['reload'] ?? 0} |`,
    `| J0 lost / duplicated / out of order / unexpected | ${t.lost} / ${t.duplicated} / ${t.outOfOrder} / ${t.unexpected} |`,
    `| T= page text ≠ server / IndexedDB text ≠ server | ${t.textMismatches} / ${t.storageMismatches} |`,
    `| X1 double effect / submission without turn / outbox left | ${t.doubleEffect} / ${t.missingTurns} / ${t.outboxLeft} |`,
    `| unhandled errors / console errors / server errors | ${t.unhandled} / ${t.consoleErrors} / ${t.serverErrors} |`,
    `| requests: submits / streams / replays (browser network lines ignored: ${r.networkMessages}) | ${r.stats.submits} / ${r.stats.streams} / ${r.stats.replays} |`,
  ];
  if (r.clientDiagnostics.size > 0) {
    lines.push('', 'Client diagnostics seen (informative; a turn that ends complete recovered from them):');
    for (const [type, seen] of r.clientDiagnostics) lines.push(`- ${type} × ${seen.count}, e.g. ${seen.examples.join(' · ')}`);
  }
  if (r.problems.length > 0) lines.push('', 'Problems:', ...r.problems.map((p) => `- ${p}`));
  lines.push('', r.passed ? 'SOAK PASS' : 'SOAK FAIL');
  return lines.join('\n');
}
