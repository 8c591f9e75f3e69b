/**
 * The example's fake agent: a plausible answer streamed as many small deltas at a steady
 * token rate, and, when asked for personas, a `propose_personas` action before the
 * closing text; asked about the weather, a reasoning part and a `get_weather` tool call
 * (structured parts) before the text. No model is involved; the point is a realistic stream to break.
 */
import type { Agent, AgentEvent } from 'lifeline-chat/server';
import type { JsonValue, MessageContent } from 'lifeline-chat/server';

/** Options of {@link createFakeAgent}. */
export interface FakeAgentOptions {
  /**
   * Deltas per second. Default: `AGENT_TOKENS_PER_SECOND` from the environment, else 40.
   */
  tokensPerSecond?: number;
}

export interface Persona {
  name: string;
  role: string;
  goal: string;
}

/** Reads `AGENT_TOKENS_PER_SECOND`, falling back to 40 for anything that is not a positive number. */
export function tokensPerSecondFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env['AGENT_TOKENS_PER_SECOND']);
  return Number.isFinite(value) && value > 0 ? value : 40;
}

export function messageText(content: MessageContent): string {
  if (typeof content === 'string') return content;
  const text = content['text'];
  return typeof text === 'string' ? text : JSON.stringify(content);
}

/**
 * Splits text into token-sized pieces (a word with its leading space; long words in
 * pieces of up to six characters) so a turn is many small deltas, like a model's.
 * Works on code points (`u`), so an emoji is never cut in half.
 */
export function tokenize(text: string): string[] {
  return text.match(/\s*\S{1,6}|\s+$/gu) ?? [];
}

/**
 * The subject of a request, good enough for a canned answer: what follows "for", "about"
 * or "on", else what follows a verb like "plan" or "build", else a neutral "this".
 */
export function topicOf(text: string): string {
  const sentence = text.trim().replace(/[.?!]+$/u, '');
  const match = /\b(?:for|about|on)\s+(.+)$/iu.exec(sentence) ?? /\b(?:plan|launch|build|design|write|start|learn)\s+(.+)$/iu.exec(sentence);
  const topic = match?.[1]?.trim() ?? 'this';
  return topic.length > 60 ? `${topic.slice(0, 57)}…` : topic;
}

export function proposePersonas(topic: string): Persona[] {
  return [
    { name: 'Maya Okafor', role: 'Operations lead at a 40-person startup', goal: `Get her team onto ${topic} without a week of training` },
    { name: 'Daniel Brooks', role: 'Freelance designer who works from trains and cafés', goal: `Keep working in ${topic} when the Wi-Fi drops every few minutes` },
    { name: 'Priya Raman', role: 'Support engineer handling escalations', goal: `See exactly what a customer saw in ${topic}, message by message` },
  ];
}

const ANSWERS: readonly ((topic: string) => string)[] = [
  (topic) =>
    `Good question. Here is how I would approach ${topic}.\n\n` +
    'First, pin down the one outcome that matters most and write it as a sentence a user would say out loud. ' +
    'Everything else becomes a trade-off against that sentence, which makes the hard calls much easier later.\n\n' +
    'Second, build the smallest version that a real person can try end to end, even if half of it is held together with tape. ' +
    'You learn more from ten minutes of someone using it than from a week of planning.\n\n' +
    'Third, measure what happens when things go wrong: slow networks, closed laptops, a server that restarts at the worst moment. ' +
    'Those are the moments people remember, so they deserve the same care as the happy path.',
  (topic) =>
    `Let me break ${topic} into three parts.\n\n` +
    '1. The problem. Write down who has it, how often, and what they do today instead. If you cannot name a person, keep digging.\n' +
    '2. The shape of a solution. Sketch the flow on paper first; it is cheaper to throw away than code.\n' +
    '3. The risks. List what would make this fail — technical, social, or simply timing — and decide which one to test first.\n\n' +
    'If you want, I can turn any of these into a checklist, or propose personas to make the first part concrete.',
  (topic) =>
    `Here is a short plan for ${topic}.\n\n` +
    'Start with a one-page brief: the goal, the audience, and what "done" looks like. Share it early and invite disagreement. ' +
    'Then split the work into weekly slices, each one shippable on its own, so progress stays visible and reversible. ' +
    'Finally, schedule a review after the second slice to check the brief still holds — plans age faster than we expect. ' +
    'Small, honest steps beat a perfect plan that never meets reality.',
];

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i += 1) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return h;
}

/** Resolves when the turn is stopped (a cancel, an operator's end, a shutdown), and not before. */
function stopped(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/**
 * Creates the fake agent. Messages mentioning "persona" get a `propose_personas` action
 * whose `output` is a JSON list of `{ name, role, goal }`. A message starting with `/fail`
 * fails halfway the first time it is sent to a conversation, to show a failed turn and
 * its Retry; sent again, it is answered. A message starting with `/stuck` starts a
 * `lookup_order` action that never answers: the turn stays live with nothing logged, which is
 * what the operator API lists as stuck (docs/protocol.md section 11) and `/support` can end.
 */
export function createFakeAgent(options: FakeAgentOptions = {}): Agent {
  const tokensPerSecond = options.tokensPerSecond ?? tokensPerSecondFromEnv();
  const interval = 1000 / tokensPerSecond;
  const failedOnce = new Set<string>();

  return async function* fakeAgent({ content, conversationId, turnId, signal }) {
    const text = messageText(content);
    const topic = topicOf(text);
    // Paced against the start time so slow event loops do not stretch the whole answer.
    const started = Date.now();
    let sent = 0;
    async function* stream(body: string): AsyncGenerator<AgentEvent> {
      for (const token of tokenize(body)) {
        if (signal.aborted) return;
        sent += 1;
        await sleep(started + sent * interval - Date.now(), signal);
        yield { type: 'delta', text: token };
      }
    }

    const failKey = `${conversationId}\n${text}`;
    if (/^\s*\/fail\b/iu.test(text) && !failedOnce.has(failKey)) {
      failedOnce.add(failKey);
      yield* stream('Starting on that now. Looking up the details and drafting an answer for you');
      throw new Error('The fake agent was asked to fail.');
    }

    if (/^\s*\/stuck\b/iu.test(text)) {
      yield* stream('Let me look that order up for you.');
      yield { type: 'action', callId: `order-${turnId}`, name: 'lookup_order', status: 'started', input: { question: text.replace(/^\s*\/stuck\s*/iu, '') } };
      await stopped(signal);
      return;
    }

    if (/weather/iu.test(text)) {
      // Structured parts (PROTOCOL 1.1): reasoning, then a tool call with its input and output.
      yield { type: 'part', part: { type: 'reasoning', text: `The user asks about the weather for ${topic}. I will look it up first.` } };
      const toolCallId = `weather-${turnId}`;
      await sleep(interval * 4, signal);
      yield { type: 'part', part: { type: 'tool-get_weather', toolCallId, state: 'output-available', input: { place: topic }, output: { forecast: 'sunny', celsius: 21 } } };
      yield* stream(`It looks sunny for ${topic}, around 21 °C. A light jacket for the evening should do.`);
      return;
    }

    if (/persona/iu.test(text)) {
      yield* stream(`Sure — here are three personas for ${topic}, each with a goal you can design against. `);
      const callId = `personas-${turnId}`;
      const input: JsonValue = { topic, count: 3 };
      yield { type: 'action', callId, name: 'propose_personas', status: 'started', input };
      await sleep(interval * 8, signal);
      const personas = proposePersonas(topic);
      yield { type: 'action', callId, name: 'propose_personas', status: 'completed', input, output: personas.map((p) => ({ ...p })) };
      yield* stream(
        `Maya tells you whether onboarding is simple enough, Daniel whether ${topic} survives a flaky connection, ` +
          'and Priya whether you can explain what happened after the fact. Start with whichever one worries you most.',
      );
      return;
    }

    const answer = ANSWERS[hash(text) % ANSWERS.length]!;
    yield* stream(answer(topic));
  };
}
