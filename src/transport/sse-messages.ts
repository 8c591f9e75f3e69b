/**
 * The last step of reading an event stream, after fetch-event-source's `getBytes` and
 * `getLines`: lines into messages, reading only what the follower uses. The library's
 * `getMessages` decodes every field's name and value (two `TextDecoder` calls per line,
 * three lines per event: about half of the parse time of a long turn, measured) and hands
 * back `id:` and `retry:`, which the follower never trusts. This decodes one value per
 * event, the data, and tells a heartbeat by its `event:` name; the framing is the
 * library's, line for line: a line without a colon, a comment and an unknown field are
 * skipped, one space after the colon is dropped, data lines join with a newline (after a
 * first non-empty one, as `getMessages` joins them), and a field name may follow one
 * byte order mark (which `TextDecoder` drops from the name there).
 */

/** ASCII codes of the letters the two field names are made of. */
const D = 100, A = 97, T = 116, E = 101, V = 118, N = 110;

/** Which of the two fields the follower reads `line` names from byte `at` (`length` bytes long), if either. */
function isField(line: Uint8Array, at: number, length: number): 'data' | 'event' | undefined {
  if (length === 4 && line[at] === D && line[at + 1] === A && line[at + 2] === T && line[at + 3] === A) return 'data';
  if (length === 5 && line[at] === E && line[at + 1] === V && line[at + 2] === E && line[at + 3] === N && line[at + 4] === T) return 'event';
  return undefined;
}

/**
 * A `getLines` callback calling `onMessage` at each blank line with the message's data,
 * or `undefined` for a heartbeat, a comment or a block without data.
 */
export function sseMessages(onMessage: (data: string | undefined) => void): (line: Uint8Array, fieldLength: number) => void {
  const decoder = new TextDecoder();
  let data = '';
  let heartbeat = false;
  return (line, fieldLength) => {
    if (line.length === 0) {
      const message = heartbeat ? undefined : data || undefined;
      data = '';
      heartbeat = false;
      return onMessage(message);
    }
    if (fieldLength <= 0) return;
    const bom = line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf ? 3 : 0;
    const field = isField(line, bom, fieldLength - bom);
    if (field === undefined) return;
    const value = decoder.decode(line.subarray(fieldLength + (line[fieldLength + 1] === 32 ? 2 : 1)));
    if (field === 'data') data = data ? data + '\n' + value : value;
    else heartbeat = value === 'heartbeat';
  };
}
