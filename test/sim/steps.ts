/**
 * The steps a run is made of, each in a fault class so a run can be narrowed to one class
 * (`--only clock`): app actions (send, follow, recover, cancel, close), time passing, tabs
 * opening, reloading, closing and crashing, `dispose()` at any point, and a fault at every
 * port. A step answers its trace line, or `undefined` when it does not apply now.
 */
import { checkDisposed, type Violation } from './invariants.js';
import type { SimTab, SimWorld } from './world.js';

export type FaultClass = 'app' | 'network' | 'hang' | 'clock' | 'storage' | 'corrupt' | 'throws' | 'overflow' | 'unknown' | 'tabs' | 'dispose';
export const FAULT_CLASSES: readonly FaultClass[] = ['app', 'network', 'hang', 'clock', 'storage', 'corrupt', 'throws', 'overflow', 'unknown', 'tabs', 'dispose'];

export interface Step {
  name: string;
  cls: FaultClass;
  weight: number;
  run(world: SimWorld): string | undefined | Promise<string | undefined>;
}

const alive = (world: SimWorld): SimTab[] => world.tabs.filter((tab) => tab.alive);
const someTab = (world: SimWorld): SimTab | undefined => {
  const tabs = alive(world);
  return tabs.length ? world.rng.pick(tabs) : undefined;
};

/** Claims a handle on `turnId` in `tab` and iterates it, recording every seq. */
export function follow(world: SimWorld, tab: SimTab, turnId: string): void {
  if (tab.handles.get(turnId)?.closed === false) return;
  world.as(tab, () => {
    const turn = tab.client.turn(turnId);
    const handle = { turn, seqs: [] as number[], closed: false };
    tab.handles.set(turnId, handle);
    // No open handle of this tab on the turn: nothing follows it here until the app does again.
    world.track(tab, `turn(${turnId}).completed`, turn.completed, () => tab.handles.get(turnId)?.closed !== false);
    turn.subscribe(() => {
      if (world.app.listenersThrow) throw new Error('sim: the app snapshot listener throws');
    });
    void (async () => {
      for await (const event of turn) handle.seqs.push(event.seq);
    })().catch((error: unknown) => world.unhandled.push(error));
  });
}

/**
 * How long after `dispose()` every promise must have settled: storage answers within 3 ms,
 * so this is "at once" for anything but a request or a timer the client forgot to abort.
 */
export const DISPOSE_GRACE_MS = 100;

/** Disposes a tab's client and checks every promise it returned settles at once. */
export async function dispose(world: SimWorld, tab: SimTab): Promise<Violation[]> {
  world.as(tab, () => tab.client.dispose());
  tab.alive = false;
  await world.scheduler.advance(DISPOSE_GRACE_MS);
  return checkDisposed(tab);
}

/** A tab closing or crashing: none of its code runs again; the browser drops its locks, channels, timers and connections. */
export function crash(world: SimWorld, tab: SimTab): void {
  tab.alive = false;
  world.sharing.kill(tab.id);
  world.scheduler.killOwner(tab.id);
  world.network.kill(tab.id);
}

export const STEPS: readonly Step[] = [
  { name: 'wait', cls: 'app', weight: 30, run: async (w) => (await w.scheduler.advance(w.rng.int(5, 3000)), 'wait') },
  {
    name: 'send',
    cls: 'app',
    weight: 10,
    run(w) {
      const tab = someTab(w);
      if (!tab) return;
      const conversation = w.rng.pick(w.conversations);
      const content = `msg-${w.seed}-${w.messages.size + 1}`;
      const submission = w.as(tab, () => tab.client.conversation(conversation).send(content));
      const journaled = w.disk.localStorage.getItem(`lifeline-outbox:sim:${submission.operationId}`) !== null;
      w.messages.set(submission.operationId, { content, tab: tab.id, discarded: false, journaled, sentAt: w.scheduler.now() });
      w.track(tab, `send(${content}).accepted`, submission.accepted);
      return `${tab.id} send ${conversation} ${content}`;
    },
  },
  {
    name: 'follow',
    cls: 'app',
    weight: 8,
    run(w) {
      const tab = someTab(w);
      const turns = [...w.server.turns.keys()];
      if (!tab || !turns.length) return;
      const turnId = w.rng.pick(turns);
      follow(w, tab, turnId);
      return `${tab.id} follow ${turnId}`;
    },
  },
  {
    name: 'close-handle',
    cls: 'app',
    weight: 3,
    run(w) {
      const tab = someTab(w);
      const open = tab && [...tab.handles].filter(([, h]) => !h.closed);
      if (!tab || !open?.length) return;
      const [turnId, handle] = w.rng.pick(open);
      handle.closed = true;
      w.as(tab, () => handle.turn.close());
      return `${tab.id} close ${turnId}`;
    },
  },
  {
    name: 'recover',
    cls: 'app',
    weight: 4,
    run(w) {
      const tab = someTab(w);
      if (!tab) return;
      const conversation = w.rng.pick(w.conversations);
      w.track(tab, `recover(${conversation})`, w.as(tab, () => tab.client.recover(conversation)));
      return `${tab.id} recover ${conversation}`;
    },
  },
  {
    name: 'cancel',
    cls: 'app',
    weight: 2,
    run(w) {
      const tab = someTab(w);
      const open = tab && [...tab.handles].filter(([, h]) => !h.closed);
      if (!tab || !open?.length) return;
      const [turnId, handle] = w.rng.pick(open);
      w.track(tab, `turn(${turnId}).cancel()`, w.as(tab, () => handle.turn.cancel()));
      return `${tab.id} cancel ${turnId}`;
    },
  },
  { name: 'open-tab', cls: 'tabs', weight: 3, run: (w) => (alive(w).length < 3 ? `open ${w.openTab().id}` : undefined) },
  {
    name: 'crash-tab',
    cls: 'tabs',
    weight: 2,
    run(w) {
      const tab = someTab(w);
      if (!tab) return;
      crash(w, tab);
      return `crash ${tab.id} (holding ${JSON.stringify(w.sharing.holders())})`;
    },
  },
  {
    name: 'reload',
    cls: 'tabs',
    weight: 3,
    run(w) {
      const tab = someTab(w);
      if (!tab) return;
      crash(w, tab);
      return `reload ${tab.id} as ${w.openTab().id}`;
    },
  },
  {
    name: 'dispose',
    cls: 'dispose',
    weight: 2,
    async run(w) {
      const tab = someTab(w);
      if (!tab) return;
      const broken = await dispose(w, tab);
      if (broken.length) throw Object.assign(new Error('dispose'), { violations: broken });
      return `dispose ${tab.id}`;
    },
  },
  {
    name: 'offline',
    cls: 'network',
    weight: 3,
    run(w) {
      const next = !w.platform.online();
      w.platform.setOnline(next);
      return next ? 'online' : 'offline';
    },
  },
  {
    name: 'http-errors',
    cls: 'network',
    weight: 4,
    run(w) {
      const f = w.network.faults;
      f.failNext = w.rng.int(1, 4);
      f.failStatus = w.rng.pick([500, 502, 503, 429]);
      f.retryAfterSec = w.rng.chance(0.5) ? w.rng.int(0, 5) : undefined;
      return `next ${f.failNext} requests answer ${f.failStatus}${f.retryAfterSec === undefined ? '' : ` Retry-After ${f.retryAfterSec}`}`;
    },
  },
  {
    name: 'stream-faults',
    cls: 'network',
    weight: 4,
    run(w) {
      const f = w.network.faults;
      [f.cut, f.duplicate, f.reorder, f.silent] = [w.rng.pick([0, 0.3, 0.8]), w.rng.pick([0, 0.3]), w.rng.pick([0, 0.3]), w.rng.pick([0, 0, 0.3])];
      f.latency = w.rng.pick([[1, 30], [50, 800], [1, 3000]] as [number, number][]);
      return `streams: cut ${f.cut} duplicate ${f.duplicate} reorder ${f.reorder} silent ${f.silent} latency ${f.latency.join('-')} ms`;
    },
  },
  {
    name: 'pause-producer',
    cls: 'network',
    weight: 2,
    run(w) {
      const live = [...w.server.turns.values()].filter((t) => !w.server.isEnded(t));
      if (!live.length) return;
      const turn = w.rng.pick(live);
      turn.paused = !turn.paused;
      return `${turn.paused ? 'pause' : 'resume'} producer of ${turn.id}`;
    },
  },
  { name: 'never-answer', cls: 'hang', weight: 3, run: (w) => `next ${(w.network.faults.hangNext = w.rng.int(1, 3))} requests never answer` },
  {
    name: 'clock-jump',
    cls: 'clock',
    weight: 3,
    run(w) {
      const delta = w.rng.pick([-1, 1]) * w.rng.pick([1000, 60_000, 3_600_000, 7_200_000]);
      w.scheduler.jumpWall(delta);
      return `wall clock ${delta > 0 ? '+' : ''}${delta} ms`;
    },
  },
  {
    name: 'storage-faults',
    cls: 'storage',
    weight: 4,
    run(w) {
      const f = w.disk.faults;
      const pick = w.rng.int(0, 3);
      w.disk.troubled = true;
      if (pick === 0) return `next ${(f.quotaNext = w.rng.int(1, 3))} storage writes hit the quota`;
      if (pick === 1) return `storage ${(f.unavailable = !f.unavailable) ? 'unavailable' : 'back'}`;
      if (pick === 2) return `localStorage ${(f.journalFull = !f.journalFull) ? 'full' : 'has room'}`;
      return `next ${(f.quotaNext = 1)} storage write hits the quota`;
    },
  },
  { name: 'corrupt', cls: 'corrupt', weight: 1, run: (w) => `next turn load finds ${(w.disk.faults.corruptNext = w.rng.int(1, 2))} corrupt records` },
  {
    name: 'throws',
    cls: 'throws',
    weight: 3,
    run(w) {
      const pick = w.rng.int(0, 3);
      if (pick === 3) return `next ${(w.app.randomThrowsNext = 1)} client random() call throws`;
      if (pick === 0) return `app listeners ${(w.app.listenersThrow = !w.app.listenersThrow) ? 'throw' : 'behave'}`;
      if (pick === 1) w.disk.troubled = true;
      if (pick === 1) return `next ${(w.disk.faults.throwNext = w.rng.int(1, 2))} store calls throw`;
      return `next ${(w.sharing.faults.postThrowsNext = w.rng.int(1, 2))} channel posts throw`;
    },
  },
  { name: 'huge-heartbeat', cls: 'overflow', weight: 2, run: (w) => `streams announce Lifeline-Heartbeat 900000000 with chance ${(w.network.faults.hugeHeartbeat = w.rng.pick([0, 0.5, 1]))}` },
  { name: 'unknown-events', cls: 'unknown', weight: 2, run: (w) => `producers log unknown event types with chance ${(w.server.options.unknownEventChance = w.rng.pick([0, 0.2, 0.5]))}` },
  {
    name: 'resume-page',
    cls: 'app',
    weight: 1,
    run(w) {
      w.platform.resume();
      return 'page resume';
    },
  },
];
