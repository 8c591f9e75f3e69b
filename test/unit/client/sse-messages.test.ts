/**
 * transport/sse-messages.ts against the line step it replaces, fetch-event-source's
 * `getMessages`: over generated streams of every kind of line (data, event, id, retry,
 * unknown fields, comments, no colon, a byte order mark before a name, with and without
 * the space, empty values, non-ASCII), both give the follower the same messages.
 */
import fc from 'fast-check';
import { getLines, getMessages, type EventSourceMessage } from '@microsoft/fetch-event-source/lib/esm/parse.js';
import { describe, expect, it } from 'vitest';
import { sseMessages } from '../../../src/transport/sse-messages.js';

const BOM = '\uFEFF';
const line = fc.oneof(
  fc.constantFrom('', '', ':comment', 'data', 'event', 'data:', 'data: ', 'retry: 10', 'id: 7', 'id: a\u0000b', 'bogus: 1'),
  fc.tuple(fc.constantFrom('data', 'event', 'id', 'retry', 'Data', 'datax', BOM + 'data', BOM + BOM + 'data', BOM + 'event'), fc.constantFrom(':', ': ', ':  '), fc.constantFrom('', 'heartbeat', '{"a":1}', 'héllo 世界 😀', BOM + 'x', 'a:b')).map(([name, colon, value]) => name + colon + value),
);
const stream = fc.array(line, { maxLength: 40 }).map((lines) => lines.join('\n') + '\n\n');

/** What the follower was handed for each message before (getMessages, then its heartbeat rule). */
function viaGetMessages(bytes: Uint8Array): (string | undefined)[] {
  const out: (string | undefined)[] = [];
  const onMessage = (message: EventSourceMessage): void => void out.push((message.event !== 'heartbeat' && message.data) || undefined);
  getLines(getMessages(() => undefined, () => undefined, onMessage))(bytes);
  return out;
}

function viaSseMessages(bytes: Uint8Array): (string | undefined)[] {
  const out: (string | undefined)[] = [];
  getLines(sseMessages((data) => void out.push(data)))(bytes);
  return out;
}

describe('sseMessages', () => {
  it('hands the follower what getMessages did, message for message, on any mix of lines', () => {
    fc.assert(
      fc.property(stream, (text) => {
        const bytes = new TextEncoder().encode(text);
        expect(viaSseMessages(bytes)).toEqual(viaGetMessages(bytes));
      }),
      { numRuns: 2_000, seed: 23 },
    );
  });

  it('joins data lines with a newline and tells a heartbeat by its event name', () => {
    const bytes = new TextEncoder().encode('id: 1\ndata: {"a":\ndata: 1}\n\nevent: heartbeat\ndata: x\n\nevent: other\ndata: y\n\n: only a comment\n\n');
    expect(viaSseMessages(bytes)).toEqual(['{"a":\n1}', undefined, 'y', undefined]);
  });
});
