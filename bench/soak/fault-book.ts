/**
 * Who fires which fault when. The schedule says which faults target which turn; the
 * book hands them out as the matching opportunity comes (a submission, a stream
 * connection, a replay request, the turn's log reaching a seq), takes back a fault
 * whose opportunity ended before it could act, and counts what really fired.
 */
import { FAULT_KINDS, GLOBAL_KINDS, STREAM_KINDS, type Fault, type FaultKind, type Schedule } from './schedule.js';

interface TurnFaults {
  submit: Fault[];
  stream: Fault[];
  global: Fault[];
  /** replay-503/429 whose stall part fired: the next replay request of the turn fails. */
  armedReplay: Fault[];
}

export interface FaultCount {
  scheduled: number;
  fired: number;
}

export class FaultBook {
  readonly schedule: Schedule;
  #byTurn = new Map<number, TurnFaults>();
  #indexes = new Map<string, number>();
  #fired = new Map<FaultKind, number>();
  #firedIds = new Set<number>();
  #closed = new Set<number>();

  constructor(schedule: Schedule) {
    this.schedule = schedule;
    for (const plan of schedule.turns) this.#byTurn.set(plan.index, { submit: [], stream: [], global: [], armedReplay: [] });
    for (const fault of schedule.faults) {
      const faults = this.#byTurn.get(fault.turn)!;
      if (fault.kind === 'submit-503' || fault.kind === 'submit-429') faults.submit.push(fault);
      else if (STREAM_KINDS.has(fault.kind)) faults.stream.push(fault);
      else if (GLOBAL_KINDS.has(fault.kind)) faults.global.push(fault);
    }
    for (const faults of this.#byTurn.values()) faults.global.sort((a, b) => (a.atSeq ?? 0) - (b.atSeq ?? 0));
  }

  /** The server created the turn of soak submission `index`. */
  bind(index: number, turnId: string): void {
    this.#indexes.set(turnId, index);
  }

  indexOf(turnId: string): number | undefined {
    return this.#indexes.get(turnId);
  }

  /** Next submit fault of the submission, consumed (it fires as the answer). */
  takeSubmit(index: number): Fault | undefined {
    const fault = this.#byTurn.get(index)?.submit.shift();
    if (fault) this.fired(fault);
    return fault;
  }

  /** Next stream fault for a new stream connection of the turn; give it back with {@link giveBack} if it cannot act. */
  takeStream(turnId: string): Fault | undefined {
    const index = this.#indexes.get(turnId);
    if (index === undefined || this.#closed.has(index)) return undefined;
    return this.#byTurn.get(index)?.stream.shift();
  }

  giveBack(fault: Fault): void {
    if (this.#closed.has(fault.turn)) return;
    this.#byTurn.get(fault.turn)?.stream.unshift(fault);
  }

  /** The stall part of a replay fault fired: arm the replay failure. */
  armReplay(fault: Fault): void {
    this.#byTurn.get(fault.turn)?.armedReplay.push(fault);
  }

  /** A replay request for the turn: the armed replay fault, if any (it fires as the answer). */
  takeReplay(turnId: string): Fault | undefined {
    const index = this.#indexes.get(turnId);
    if (index === undefined) return undefined;
    const fault = this.#byTurn.get(index)?.armedReplay.shift();
    if (fault) this.fired(fault);
    return fault;
  }

  /** Global faults due now that the turn's log reached `seq`. */
  takeGlobal(turnId: string, seq: number): Fault[] {
    const index = this.#indexes.get(turnId);
    if (index === undefined) return [];
    const faults = this.#byTurn.get(index)!;
    const due: Fault[] = [];
    while (faults.global[0] && (faults.global[0].atSeq ?? 0) <= seq) due.push(faults.global.shift()!);
    return due;
  }

  /** True while faults of the turn still wait for an opportunity (the agent keeps the turn going). */
  pending(index: number): boolean {
    const faults = this.#byTurn.get(index);
    return !!faults && (faults.stream.length > 0 || faults.global.length > 0 || faults.armedReplay.length > 0);
  }

  /** Counts a fault as injected (once). */
  fired(fault: Fault): void {
    if (this.#firedIds.has(fault.id)) return;
    this.#firedIds.add(fault.id);
    // replay-* count once their replay failed, not at the stall that armed them.
    this.#fired.set(fault.kind, (this.#fired.get(fault.kind) ?? 0) + 1);
  }

  /** The turn ended and its client is done: faults still waiting will not fire. */
  close(index: number): void {
    this.#closed.add(index);
    const faults = this.#byTurn.get(index);
    if (faults) {
      faults.stream.length = 0;
      faults.global.length = 0;
      faults.armedReplay.length = 0;
    }
  }

  counts(): Map<FaultKind, FaultCount> {
    const counts = new Map<FaultKind, FaultCount>(FAULT_KINDS.map((kind) => [kind, { scheduled: 0, fired: this.#fired.get(kind) ?? 0 }]));
    for (const fault of this.schedule.faults) counts.get(fault.kind)!.scheduled++;
    return counts;
  }
}
