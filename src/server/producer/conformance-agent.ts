import type { Agent, AgentContext, AgentEvent } from './agent.js';
import type { JsonValue, MessageContent, PartObject } from '../../protocol/schemas.js';

/** Options of {@link conformanceAgent}. */
export interface ConformanceAgentOptions {
  /** Produces turns for messages that are not conformance scripts. Default: one short delta. */
  fallback?: Agent;
  /** Longest pause one step may ask for, ms; longer ones are cut to it. Default 60 000. */
  maxPauseMs?: number;
}

type Step = Record<string, JsonValue>;

/** The part an `echoContext` step yields: the submission's `context` as `data` (null when none). */
const CONTEXT_PART = 'data-lifeline-context';

/** The steps of a conformance script, or `undefined` when `content` is not one. */
function scriptSteps(content: MessageContent): Step[] | undefined {
  if (typeof content !== 'object' || content['lifelineConformance'] !== 1) return undefined;
  const steps = content['steps'];
  if (!Array.isArray(steps) || steps.some((step) => typeof step !== 'object' || step === null || Array.isArray(step))) {
    throw new Error('lifelineConformance: "steps" must be an array of objects');
  }
  return steps as Step[];
}

/** Waits `ms`, or less when the turn is stopped. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The event of a `delta`, `action` or `part` step. */
function stepEvent(step: Step): AgentEvent {
  if (typeof step['delta'] === 'string') return { type: 'delta', text: step['delta'] };
  const part = step['part'];
  // The producer validates the part itself (an object with a string `type`): a bad one ends the turn failed.
  if (typeof part === 'object' && part !== null && !Array.isArray(part) && typeof part['type'] === 'string') return { type: 'part', part: part as PartObject };
  const action = step['action'];
  if (typeof action === 'object' && action !== null && !Array.isArray(action)) {
    const { callId, name, status, input, output, error } = action;
    if (typeof callId !== 'string' || typeof name !== 'string' || (status !== 'started' && status !== 'completed' && status !== 'failed')) {
      throw new Error('lifelineConformance: an action step needs callId, name and status');
    }
    return {
      type: 'action',
      callId,
      name,
      status,
      ...(input === undefined ? {} : { input }),
      ...(output === undefined ? {} : { output }),
      ...(error === undefined ? {} : { error }),
    };
  }
  throw new Error(`lifelineConformance: unknown step ${JSON.stringify(step).slice(0, 80)}`);
}

const defaultFallback: Agent = async function* () {
  yield { type: 'delta', text: 'Conformance agent: send {"lifelineConformance":1,"steps":[…]} to script a turn.' };
};

/**
 * The agent `lifeline-chat-conformance` scripts its turns with (docs/conformance.md): a
 * message whose content is `{"lifelineConformance": 1, "steps": [...]}` yields exactly
 * those steps in order: `{"delta": text}`, `{"action": {callId, name, status, input?,
 * output?, error?}}`, `{"part": {type, …}}`, `{"pauseMs": n}` (waits, cut short by a
 * cancel), `{"fail": message}` (throws: the turn ends `failed`), `{"echoContext": true}`
 * (since 1.2: a part `{"type": "data-lifeline-context", "data": <the submission's context
 * or null>}`). A continuation's assistant message may carry a script too. Other messages go to
 * `fallback`. Mount it only on a server meant for testing: a script can hold a turn
 * open for `maxPauseMs` per step.
 *
 * @example
 * const handler = createLifelineHandler({ agent: conformanceAgent({ fallback: myAgent }) });
 * // npx lifeline-chat-conformance http://127.0.0.1:8787/api
 */
export function conformanceAgent(options: ConformanceAgentOptions = {}): Agent {
  const fallback = options.fallback ?? defaultFallback;
  const maxPauseMs = options.maxPauseMs ?? 60_000;
  return (context: AgentContext) => {
    const steps = scriptSteps(context.content);
    if (steps === undefined) return fallback(context);
    return (async function* () {
      for (const step of steps) {
        if (context.signal.aborted) return;
        if (typeof step['pauseMs'] === 'number') {
          await pause(Math.min(Math.max(0, step['pauseMs']), maxPauseMs), context.signal);
        } else if (typeof step['fail'] === 'string') {
          throw new Error(step['fail']);
        } else if (step['echoContext'] === true) {
          // Since 1.2: what the agent was handed beside the message, for this submission only.
          yield { type: 'part', part: { type: CONTEXT_PART, data: context.context ?? null } };
        } else {
          yield stepEvent(step);
        }
      }
    })();
  };
}
