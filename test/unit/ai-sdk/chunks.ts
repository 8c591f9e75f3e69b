/** Chunk streams for the AI SDK tests: any chunk (valid or not, v7-only types too) and structurally valid streams. */
import fc from 'fast-check';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';

const id = fc.constantFrom('a', 'b', 'c');
const text = fc.string({ maxLength: 6 });
const meta = fc.option(fc.constant({ provider: { cached: true } }), { nil: undefined });
const json = fc.jsonValue({ maxDepth: 2 });

/** One chunk of any type the AI SDK 5–7 streams, including ones this version does not know. */
export const anyChunk: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ type: fc.constant('text-start'), id, providerMetadata: meta }),
  fc.record({ type: fc.constant('text-delta'), id, delta: text, providerMetadata: meta }),
  fc.record({ type: fc.constant('text-delta'), id, delta: text }),
  fc.record({ type: fc.constant('text-end'), id }),
  fc.record({ type: fc.constantFrom('reasoning-start', 'reasoning-end'), id }),
  fc.record({ type: fc.constant('reasoning-delta'), id, delta: text }),
  fc.record({ type: fc.constant('tool-input-start'), toolCallId: id, toolName: fc.constant('weather'), dynamic: fc.boolean() }),
  fc.record({ type: fc.constant('tool-input-delta'), toolCallId: id, inputTextDelta: text }),
  fc.record({ type: fc.constant('tool-input-available'), toolCallId: id, toolName: fc.constant('weather'), input: json }),
  fc.record({ type: fc.constant('tool-input-error'), toolCallId: id, toolName: fc.constant('weather'), input: json, errorText: text }),
  fc.record({ type: fc.constant('tool-output-available'), toolCallId: id, output: json, preliminary: fc.boolean() }),
  fc.record({ type: fc.constant('tool-output-error'), toolCallId: id, errorText: text }),
  fc.record({ type: fc.constant('tool-output-denied'), toolCallId: id }),
  fc.record({ type: fc.constant('tool-approval-request'), approvalId: id, toolCallId: id }),
  fc.record({ type: fc.constant('tool-approval-response'), approvalId: id, approved: fc.boolean() }),
  fc.record({ type: fc.constant('source-url'), sourceId: id, url: fc.constant('https://example.com/'), title: text }),
  fc.record({ type: fc.constant('source-document'), sourceId: id, mediaType: fc.constant('text/plain'), title: text }),
  fc.record({ type: fc.constant('file'), url: fc.constant('data:text/plain,x'), mediaType: fc.constant('text/plain') }),
  fc.record({ type: fc.constant('reasoning-file'), url: fc.constant('data:text/plain,x'), mediaType: fc.constant('text/plain') }),
  fc.record({ type: fc.constantFrom('data-weather', 'data-status'), id: fc.option(id, { nil: undefined }), data: json, transient: fc.option(fc.boolean(), { nil: undefined }) }),
  fc.record({ type: fc.constantFrom('start-step', 'finish-step', 'reset-step') }),
  fc.record({ type: fc.constant('custom'), kind: text, value: json }),
  fc.record({ type: fc.constant('start'), messageId: fc.option(id, { nil: undefined }), messageMetadata: fc.option(json, { nil: undefined }) }),
  fc.record({ type: fc.constant('message-metadata'), messageMetadata: fc.dictionary(fc.constantFrom('x', 'y'), json, { maxKeys: 2 }) }),
  fc.record({ type: fc.constant('finish'), finishReason: fc.constantFrom('stop', 'length') }),
  fc.record({ type: fc.constant('error'), errorText: text }),
  fc.record({ type: fc.constant('abort') }),
);

type Chunk = Record<string, unknown>;

/** One piece of a valid stream; `n` makes its ids unique. */
const segment: fc.Arbitrary<(n: number) => Chunk[]> = fc.oneof(
  fc.tuple(fc.constantFrom('text', 'reasoning'), fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 4 }), fc.boolean()).map(([kind, deltas, close]) => (n: number) => [
    { type: `${kind}-start`, id: `${kind}${n}` },
    // Text deltas sometimes carry metadata (W3): the part keeps the last.
    ...deltas.map((delta, i) => ({ type: `${kind}-delta`, id: `${kind}${n}`, delta, ...(kind === 'text' && i % 2 === 1 && { providerMetadata: { mock: { i } } }) })),
    ...(close ? [{ type: `${kind}-end`, id: `${kind}${n}` }] : []),
  ]),
  fc.tuple(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 })).map(([x, y]) => (n: number) => [
    { type: 'text-start', id: `p${n}` },
    { type: 'text-start', id: `q${n}` },
    { type: 'text-delta', id: `p${n}`, delta: x },
    { type: 'text-delta', id: `q${n}`, delta: y },
    { type: 'text-delta', id: `p${n}`, delta: y },
    { type: 'text-end', id: `p${n}` },
    { type: 'text-end', id: `q${n}` },
  ]),
  fc.tuple(fc.boolean(), fc.dictionary(fc.constantFrom('city', 'days'), fc.oneof(fc.string({ maxLength: 4 }), fc.integer()), { maxKeys: 2 }), fc.constantFrom('output', 'error', 'none', 'denied'), fc.nat({ max: 3 })).map(
    ([dynamic, input, outcome, cuts]) =>
      (n: number) => {
        const toolCallId = `call${n}`;
        const raw = JSON.stringify(input);
        const step = Math.max(1, Math.ceil(raw.length / (cuts + 1)));
        const pieces = Array.from({ length: Math.ceil(raw.length / step) }, (_, i) => raw.slice(i * step, (i + 1) * step));
        return [
          { type: 'tool-input-start', toolCallId, toolName: 'weather', ...(dynamic && { dynamic: true }) },
          ...pieces.map((inputTextDelta) => ({ type: 'tool-input-delta', toolCallId, inputTextDelta })),
          { type: 'tool-input-available', toolCallId, toolName: 'weather', input, ...(dynamic && { dynamic: true }) },
          ...(outcome === 'output' ? [{ type: 'tool-output-available', toolCallId, output: { celsius: n } }] : []),
          ...(outcome === 'error' ? [{ type: 'tool-output-error', toolCallId, errorText: 'no network' }] : []),
          ...(outcome === 'denied' ? [{ type: 'tool-approval-request', approvalId: `ap${n}`, toolCallId }, { type: 'tool-output-denied', toolCallId }] : []),
        ];
      },
  ),
  fc.constantFrom(
    (n: number) => [{ type: 'source-url', sourceId: `s${n}`, url: 'https://example.com/', title: 'Example' }],
    (n: number) => [{ type: 'source-document', sourceId: `d${n}`, mediaType: 'text/plain', title: 'Doc' }],
    () => [{ type: 'file', url: 'data:text/plain,x', mediaType: 'text/plain' }],
    () => [{ type: 'start-step' }],
    () => [{ type: 'finish-step' }],
    (n: number) => [{ type: 'data-weather', id: 'w', data: { n } }],
    (n: number) => [{ type: 'data-status', data: { n }, transient: true }],
    (n: number) => [{ type: 'message-metadata', messageMetadata: { step: n } }],
  ),
);

/**
 * A stream `readUIMessageStream` accepts: start, pieces, closing text, finish. The AI SDK
 * shows a message as of its last visible change (a step boundary alone is not one), so
 * the closing text makes its final message the whole stream's.
 */
export const validStream: fc.Arbitrary<Chunk[]> = fc
  .tuple(fc.array(segment, { maxLength: 7 }), fc.option(fc.constant({ source: 'mock' }), { nil: undefined }))
  .map(([segments, messageMetadata]) => [{ type: 'start', ...(messageMetadata && { messageMetadata }) }, ...segments.flatMap((make, n) => make(n)), { type: 'text-start', id: 'z' }, { type: 'text-delta', id: 'z', delta: '.' }, { type: 'text-end', id: 'z' }, { type: 'finish', finishReason: 'stop' }]);

/** The final message `readUIMessageStream` (the AI SDK itself) builds from `chunks`. */
export async function referenceMessage(chunks: readonly Chunk[]): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk as UIMessageChunk);
      controller.close();
    },
  });
  for await (const message of readUIMessageStream({ stream, terminateOnError: true })) last = structuredClone(message);
  return last;
}
