/**
 * A channel that refuses a post (`DataCloneError`, or closed under the tab) costs that one
 * message, never the follower: before, the refusal was thrown out of the relay's microtask
 * as an uncaught exception (found by the simulator, test/sim/, class `throws`).
 */
import { afterEach, expect, it } from 'vitest';
import { joinTurnShare } from '../../../src/tabs/turn-share.js';
import type { Tabs, TabChannel } from '../../../src/ports/tabs.js';

const uncaught: unknown[] = [];
const onUncaught = (error: unknown): void => void uncaught.push(error);
afterEach(() => void process.off('uncaughtException', onUncaught));

it('drops a refused post instead of throwing out of join, the answer or the relay', async () => {
  process.on('uncaughtException', onUncaught);
  const listeners: ((event: { data: unknown }) => void)[] = [];
  const posted: unknown[] = [];
  let refuse = true;
  const channel: TabChannel = {
    postMessage(message) {
      if (refuse) throw new DOMException('could not clone', 'DataCloneError');
      posted.push(message);
    },
    addEventListener: (_type, listener) => void listeners.push(listener),
    close() {},
  };
  let leading: () => void = () => {};
  const led = new Promise<void>((resolve) => (leading = resolve));
  const tabs: Tabs = { locks: () => ({ request: (_name, _options, callback) => callback() }), channel: () => channel };
  // Joining posts "I follow this turn": refused, and join still answers.
  const share = joinTurnShare(tabs, 'lifeline-turn:t', { onLead: () => leading(), onBatch() {}, onBadBatch() {} }, () => 3);
  expect(share).toBeDefined();
  await led;
  // Another tab follows too: the answer is refused as well.
  listeners.forEach((listener) => listener({ data: 0 }));
  share!.relay('{"seq":3}');
  await new Promise((resolve) => setImmediate(resolve));
  expect(uncaught).toEqual([]);
  // Once the channel takes posts again, the next batch goes out with the cursor.
  refuse = false;
  share!.relay('{"seq":4}');
  await new Promise((resolve) => setImmediate(resolve));
  expect(posted).toEqual([[3, ['{"seq":4}']]]);
  share!.leave();
});
