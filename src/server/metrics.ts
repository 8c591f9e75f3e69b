/**
 * The few counters and the histogram an operator already collects, through the
 * OpenTelemetry API when the app passes a `meter` (`@opentelemetry/api` is an optional peer:
 * these types are the part of its `Meter` used here, so nothing is imported). Without a
 * meter every call is a no-op.
 */

/** The part of an OpenTelemetry `Counter` used here. */
export interface CounterLike {
  add(value: number, attributes?: Record<string, string>): void;
}
/** The part of an OpenTelemetry `Histogram` used here. */
export interface HistogramLike {
  record(value: number, attributes?: Record<string, string>): void;
}
/** The part of an OpenTelemetry `Meter` (`metrics.getMeter('lifeline-chat')`) used here. */
export interface MeterLike {
  createCounter(name: string, options?: { description?: string; unit?: string }): CounterLike;
  createHistogram(name: string, options?: { description?: string; unit?: string }): HistogramLike;
}

/** What the server counts. */
export interface ServerMetrics {
  started(): void;
  ended(status: 'complete' | 'failed' | 'cancelled'): void;
  /** A receipt recorded a delivery this long after the turn ended, ms. */
  delivered(latencyMs: number): void;
  /** An operator listing found these turns stuck or undelivered (each counted once per state, see {@link createServerMetrics}). */
  listed(state: 'stuck' | 'undelivered', turnIds: readonly string[]): void;
  /** A follow request resumed a live turn from a seq > 0 (docs/protocol.md section 2). */
  resumed(): void;
}

const NONE: ServerMetrics = { started() {}, ended() {}, delivered() {}, listed() {}, resumed() {} };

/**
 * Turn ids this instance already counted, per state, so a page polling the operator API every
 * second does not count the same stuck turn sixty times a minute. Bounded: the oldest ids are
 * forgotten first, and a turn forgotten and listed again is counted again.
 */
const COUNTED_TURNS = 10_000;

class SeenOnce {
  readonly #ids = new Set<string>();
  /** True the first time `id` is seen (within the last {@link COUNTED_TURNS}). */
  first(id: string): boolean {
    if (this.#ids.has(id)) return false;
    this.#ids.add(id);
    // A Set iterates in insertion order: its first entry is the oldest.
    if (this.#ids.size > COUNTED_TURNS) this.#ids.delete(this.#ids.values().next().value as string);
    return true;
  }
}

/**
 * The meter's instruments, created once. `lifeline.turns.stuck` and
 * `lifeline.turns.undelivered` count turns found in that state by operator listings (the index
 * is read only when someone lists, so a turn nobody listed is not counted), each turn once per
 * instance. The protocol has no report of a stall from client to server (docs/protocol.md);
 * what a server sees of one is the client coming back: `lifeline.streams.resumed` counts follow
 * requests that resume a live turn from a seq > 0 (a stall the client's watchdog caught, a cut
 * connection, or a page reloaded mid-answer).
 */
export function createServerMetrics(meter: MeterLike | undefined): ServerMetrics {
  if (!meter) return NONE;
  const started = meter.createCounter('lifeline.turns.started', { description: 'Turns created by submissions.' });
  const completed = meter.createCounter('lifeline.turns.completed', { description: 'Turns this instance produced to turn.end complete.' });
  const failed = meter.createCounter('lifeline.turns.failed', { description: 'Turns this instance produced to turn.end failed or cancelled.' });
  const found = {
    stuck: meter.createCounter('lifeline.turns.stuck', { description: 'Turns operator listings found stuck, each once.' }),
    undelivered: meter.createCounter('lifeline.turns.undelivered', { description: 'Turns operator listings found ended without a receipt past the undelivered window, each once.' }),
  };
  const latency = meter.createHistogram('lifeline.delivery.latency', { description: 'From turn.end to its first receipt.', unit: 'ms' });
  const resumed = meter.createCounter('lifeline.streams.resumed', { description: 'Follow requests resuming a live turn from a seq > 0: a client whose stream was lost.' });
  const counted = { stuck: new SeenOnce(), undelivered: new SeenOnce() };
  return {
    started: () => started.add(1),
    ended: (status) => (status === 'complete' ? completed : failed).add(1, { status }),
    delivered: (latencyMs) => latency.record(latencyMs),
    listed: (state, turnIds) => {
      const fresh = turnIds.filter((id) => counted[state].first(id)).length;
      if (fresh > 0) found[state].add(fresh);
    },
    resumed: () => resumed.add(1),
  };
}
