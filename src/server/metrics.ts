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
/** The part of an OpenTelemetry `Meter` (`metrics.getMeter('lifeline')`) used here. */
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
  /** An operator listing found this many stuck or undelivered turns (a gauge would need state; counted per listing). */
  listed(state: 'stuck' | 'undelivered', count: number): void;
}

const NONE: ServerMetrics = { started() {}, ended() {}, delivered() {}, listed() {} };

export function createServerMetrics(meter: MeterLike | undefined): ServerMetrics {
  if (!meter) return NONE;
  const started = meter.createCounter('lifeline.turns.started', { description: 'Turns created by submissions.' });
  const completed = meter.createCounter('lifeline.turns.completed', { description: 'Turns this instance produced to turn.end complete.' });
  const failed = meter.createCounter('lifeline.turns.failed', { description: 'Turns this instance produced to turn.end failed or cancelled.' });
  const stuck = meter.createCounter('lifeline.turns.stuck', { description: 'Stuck turns found by operator listings.' });
  const undelivered = meter.createCounter('lifeline.turns.undelivered', { description: 'Undelivered turns found by operator listings.' });
  const latency = meter.createHistogram('lifeline.delivery.latency', { description: 'From turn.end to its first receipt.', unit: 'ms' });
  return {
    started: () => started.add(1),
    ended: (status) => (status === 'complete' ? completed : failed).add(1, { status }),
    delivered: (latencyMs) => latency.record(latencyMs),
    listed: (state, count) => (count > 0 ? (state === 'stuck' ? stuck : undelivered).add(count) : undefined),
  };
}
