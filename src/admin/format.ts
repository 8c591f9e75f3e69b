/** The human-readable output of `lifeline-chat-admin` (with `--json` the server's answer is printed as it came). */

interface TurnLike {
  id?: unknown;
  principal?: unknown;
  conversationId?: unknown;
  status?: unknown;
  lastSeq?: unknown;
  createdAt?: unknown;
  updatedAt?: unknown;
  delivery?: { state?: unknown; at?: unknown };
}

function row(turn: TurnLike): string[] {
  return [turn.id, turn.principal, turn.conversationId, turn.status, turn.delivery?.state ?? '-', turn.lastSeq, turn.updatedAt].map((cell) => String(cell ?? '-'));
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((cells) => cells[column]!.length)));
  return rows.map((cells) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()).join('\n');
}

const HEADER = ['TURN', 'PRINCIPAL', 'CONVERSATION', 'STATUS', 'DELIVERY', 'SEQ', 'UPDATED'];

export function formatList(body: { turns?: unknown[] }): string {
  const turns = (body.turns ?? []) as TurnLike[];
  if (turns.length === 0) return 'No turns.';
  return `${table([HEADER, ...turns.map(row)])}\n${turns.length} turn${turns.length === 1 ? '' : 's'}.`;
}

/** One turn and its events, one line each: what an action did is shown as its JSON output. */
export function formatTurn(body: { turn?: unknown; events?: unknown[] }): string {
  const lines = [table([HEADER, row((body.turn ?? {}) as TurnLike)])];
  for (const event of (body.events ?? []) as Record<string, unknown>[]) {
    const { turnId: _, seq, type, ...rest } = event;
    lines.push(`  ${String(seq).padStart(5)}  ${String(type).padEnd(10)} ${JSON.stringify(rest)}`);
  }
  return lines.join('\n');
}
