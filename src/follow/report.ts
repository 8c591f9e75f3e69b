/**
 * What a follower tells the app besides its snapshot's text: the machine's notices as
 * typed diagnostics, and the last recovery and stall, which the snapshot shows too.
 */
import type { FollowNotice } from '../core/follow-types.js';
import type { Diagnostic, RecoveryInfo, RecoveryPath, StallInfo } from '../types.js';
import type { TurnDiagnosticFields, TurnDiagnosticType } from './intake.js';

/** What a report needs from its follower. */
export interface ReportHost {
  readonly id: string;
  emit(diagnostic: Diagnostic): void;
  now(): number;
  /** The last applied seq (where a replay starts). */
  lastSeq(): number;
  /** Events the current stream connection applied (the size of a resumed burst). */
  burst(): number;
  /** The snapshot must be rebuilt. */
  changed(): void;
}

export class TurnReport {
  recovered: RecoveryInfo | undefined;
  stall: StallInfo | undefined;

  constructor(private readonly host: ReportHost) {}

  /** Emits a diagnostic about this turn, stamped now. */
  tell<T extends TurnDiagnosticType>(type: T, fields: TurnDiagnosticFields<T>, at = this.host.now()): void {
    this.host.emit({ type, at, turnId: this.host.id, ...fields } as Diagnostic);
  }

  /** One notice of the machine, stamped with its transition's time. */
  say(notice: FollowNotice, at: number): void {
    const { host } = this;
    switch (notice.type) {
      case 'recovering':
        return this.tell('recovering', { path: 'replay', fromSeq: host.lastSeq() }, at);
      case 'retry':
      case 'failed':
        // Shared with the outbox's submissions: these name their subject `id`.
        return host.emit({ ...notice, at, id: host.id });
      case 'recovered':
        // A resumed burst arrives in one chunk: counted once this task has applied it.
        if (notice.path === 'resume') return queueMicrotask(() => this.recover('resume', host.burst()));
        return this.recover('replay', notice.events);
      case 'stalled':
        this.stall = { at, watchdog: notice.watchdog };
        host.changed();
        break;
    }
    host.emit({ at, turnId: host.id, ...notice } as Diagnostic);
  }

  /** Events came back through `path`: said, and shown in the snapshot. */
  recover(path: RecoveryPath, events: number): void {
    this.recovered = { path, events, at: this.host.now() };
    this.tell('recovered', { path, events });
    this.host.changed();
  }
}
