/**
 * Epoch ms with sub-millisecond resolution, for timelines compared across processes (the
 * bench process and a page): `performance.now()` anchored at the instant `Date.now()` ticks,
 * so both sides agree with the wall clock to a fraction of a millisecond. (Each process's
 * `performance.timeOrigin` is its own estimate of the wall clock, and Node's and Chromium's
 * were measured up to 1.5 ms apart: too much for phases of a few ms.)
 */
export function epochClock(): () => number {
  const start = Date.now();
  let tick = start;
  // Spins until the next millisecond begins: under 1 ms, once.
  while (tick === start) tick = Date.now();
  const offset = tick - performance.now();
  return () => offset + performance.now();
}
