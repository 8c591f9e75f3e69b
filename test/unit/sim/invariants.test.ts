/**
 * The simulator's own parts can fail: the invariants report what they exist to catch, and
 * virtual time behaves like the platform's (overflow, ordering, wall clock apart from the
 * monotonic one). A simulator whose checks never fire would pass any client.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkDisposed, checkEnd, checkStep } from '../../sim/invariants.js';
import { createScheduler, MAX_TIMER_MS } from '../../sim/scheduler.js';
import { STEPS } from '../../sim/steps.js';
import { createWorld, type SimWorld } from '../../sim/world.js';

let world: SimWorld | undefined;
afterEach(() => world?.close());

const send = STEPS.find((step) => step.name === 'send')!;

describe('simulator invariants', () => {
  it('report a message that is neither stored, journaled nor accepted as lost', async () => {
    world = createWorld(5);
    world.openTab();
    await world.scheduler.settle();
    world.network.faults.offline = true;
    await send.run(world);
    await world.scheduler.advance(50);
    expect(checkStep(world)).toEqual([]);
    // What D1 did: the journal copy removed while storage did not hold the entry.
    const [operationId] = [...world.messages.keys()];
    world.disk.localStorage.removeItem(`lifeline-outbox:sim:${operationId}`);
    (world.disk.durableOutbox as Set<string>).delete(operationId!);
    expect(checkStep(world).map((v) => v.kind)).toEqual(['lost-message']);
  });

  it('report a promise still pending after dispose', async () => {
    world = createWorld(6);
    const tab = world.openTab();
    await world.scheduler.advance(50);
    expect(checkDisposed(tab)).toEqual([]);
    world.track(tab, 'never', new Promise(() => {}));
    expect(checkDisposed(tab)).toEqual([expect.objectContaining({ kind: 'unsettled-after-dispose', detail: 'tab1: never still pending after dispose()' })]);
  });

  it("a closed turn's completed waits on the app at the end of a run, never after dispose", async () => {
    world = createWorld(8);
    const tab = world.openTab();
    await world.scheduler.advance(50);
    let open = true;
    world.track(tab, 'closed turn', new Promise(() => {}), () => !open);
    expect(checkEnd(world).map((v) => v.kind)).toEqual(['unsettled-at-end']);
    open = false;
    expect(checkEnd(world)).toEqual([]);
    expect(checkDisposed(tab).map((v) => v.kind)).toEqual(['unsettled-after-dispose']);
  });

  it('report a text that is not the concatenation of the deltas', async () => {
    world = createWorld(7);
    const tab = world.openTab();
    await world.scheduler.settle();
    await send.run(world);
    await world.scheduler.advance(20_000);
    const [turn] = world.server.turns.values();
    expect(turn && world.server.isEnded(turn)).toBe(true);
    expect(checkStep(world)).toEqual([]);
    // The server's log changes under the client: its text no longer matches.
    const delta = turn!.log.find((e) => e.type === 'delta');
    if (delta) delta['text'] = `${String(delta['text'])}!`;
    expect(tab.client.turns.getSnapshot().length).toBeGreaterThan(0);
    expect(checkStep(world).map((v) => v.kind)).toContain('text');
  });
});

describe('virtual time', () => {
  const scheduler = () => createScheduler({ setImmediate: (run) => setImmediate(run) });

  it('runs timers by due time, then by order, and past 2^31 − 1 ms after 1 ms as the platform does', async () => {
    const s = scheduler();
    const fired: string[] = [];
    s.setTimer(() => fired.push('b'), 10, 'x');
    s.setTimer(() => fired.push('overflow'), MAX_TIMER_MS + 1, 'x');
    s.setTimer(() => fired.push('c'), 10, 'x');
    s.setTimer(() => fired.push('a'), 0, 'x');
    await s.advance(5);
    expect(fired).toEqual(['a', 'overflow']);
    await s.advance(5);
    expect(fired).toEqual(['a', 'overflow', 'b', 'c']);
  });

  it('jumps the wall clock both ways without moving the monotonic one', async () => {
    const s = scheduler();
    const wall = s.wall();
    s.jumpWall(-3_600_000);
    expect([s.now(), s.wall()]).toEqual([0, wall - 3_600_000]);
    await s.advance(1000);
    expect([s.now(), s.wall()]).toEqual([1000, wall - 3_599_000]);
  });

  it('drops every timer of a closed tab', async () => {
    const s = scheduler();
    let fired = 0;
    s.setTimer(() => fired++, 10, 'tab1');
    s.setTimer(() => fired++, 10, 'tab2');
    s.killOwner('tab1');
    await s.advance(20);
    expect(fired).toBe(1);
  });
});
