/**
 * The soak's global faults (a server restart, a reload of tab A, the browser offline, a
 * second tab for a while), run one at a time by one worker as the turn log reaches the
 * seq each is due at.
 */
import { isStreamRequest } from '../../test/fixtures/fault-proxy.js';
import type { FaultBook } from './fault-book.js';
import type { Fault, Schedule } from './schedule.js';
import type { SoakBrowser } from './soak-browser.js';
import type { SoakServer } from './soak-server.js';

export interface GlobalFaults {
  /** Faults now due (the server's turn log reached their seq). */
  push(faults: Fault[]): void;
  /** Starts the worker, once both sides are up. */
  start(server: SoakServer, browser: SoakBrowser): void;
  /** Stops the worker after the fault it is running; resolves once it has. */
  stop(): Promise<void>;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function createGlobalFaults(schedule: Schedule, book: FaultBook, problem: (text: string) => void): GlobalFaults {
  const queue: Fault[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  let worker: Promise<void> = Promise.resolve();
  /** Each second tab gets its own name (B1, B2, …) so their page loads stay apart. */
  let secondTabs = 0;
  /** A second tab is open. */
  let secondTab = false;

  async function run(fault: Fault, server: SoakServer, browser: SoakBrowser): Promise<void> {
    switch (fault.kind) {
      case 'server-restart':
        book.fired(fault);
        return server.restart(fault.durationMs ?? 500);
      case 'reload':
        book.fired(fault);
        await browser.reloadA();
        // The reloaded page follows again every turn it has not seen end.
        for (const [index, turns] of server.turnsBySubmission) {
          const turnId = turns[0];
          if (turnId !== undefined && !browser.reports.doneByTurn.has(turnId) && schedule.turns[index]) browser.followInA(turnId);
        }
        return;
      case 'offline':
        book.fired(fault);
        await browser.context.setOffline(true);
        server.proxy.resetWhere(isStreamRequest);
        await pause(fault.durationMs ?? 500);
        await browser.context.setOffline(false);
        return;
      case 'second-tab': {
        if (secondTab) return;
        book.fired(fault);
        secondTabs++;
        const tab = await browser.openTab(`B${secondTabs}`);
        secondTab = true;
        await pause(fault.durationMs ?? 1000);
        await tab.close();
        secondTab = false;
        return;
      }
      default:
        return;
    }
  }
  return {
    push(faults) {
      queue.push(...faults);
      wake?.();
    },
    start(server, browser) {
      worker = (async () => {
        while (!done) {
          const fault = queue.shift();
          if (!fault) {
            await new Promise<void>((resolve) => {
              wake = resolve;
              setTimeout(resolve, 200);
            });
            continue;
          }
          try {
            await run(fault, server, browser);
          } catch (error) {
            problem(`global fault ${fault.kind} #${fault.id}: ${String(error)}`);
          }
        }
      })();
    },
    stop() {
      done = true;
      wake?.();
      return worker;
    },
  };
}
