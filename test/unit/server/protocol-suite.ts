/**
 * The reference server's protocol suite, docs/protocol.md sections 1–6 over real HTTP,
 * reusable for any TurnLog: `defineProtocolSuite('memory', makeLog)`. Everything the
 * server sends is validated with the shared zod schemas. Each section's tests live in
 * their own file; protocol-kit.ts holds what they share.
 */
import { describe } from 'vitest';
import { protocolKit, type MakeProtocolLog, type ProtocolSuiteOptions } from './protocol-kit.js';
import { defineFollowTests } from './protocol-follow.js';
import { defineReplayTests } from './protocol-replay.js';
import { defineRoutesTests } from './protocol-routes.js';
import { defineSubmitTests } from './protocol-submit.js';

export type { MakeProtocolLog, ProtocolLogContext, ProtocolSuiteOptions } from './protocol-kit.js';

export function defineProtocolSuite(name: string, makeLog: MakeProtocolLog, suiteOptions: ProtocolSuiteOptions = {}): void {
  describe(`protocol (${name})`, () => {
    const kit = protocolKit(makeLog, suiteOptions);
    defineSubmitTests(kit);
    defineFollowTests(kit);
    defineReplayTests(kit);
    defineRoutesTests(kit);
  });
}
