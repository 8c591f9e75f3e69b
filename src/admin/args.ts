/** The command line of `lifeline-chat-admin`, parsed into one {@link AdminCommand}. */
import { parseArgs } from 'node:util';
import { headerOf, usage } from '../conformance/cli-args.js';
import { ID_PATTERN } from '../protocol/schemas.js';
import type { OperatorState } from '../protocol/server-schemas.js';

export const USAGE = `Usage: lifeline-chat-admin <base-url> <command> [options]

Support tooling over a Lifeline server's operator API (protocol 1.2 section 11).
Example: lifeline-chat-admin http://127.0.0.1:8787/api list --stuck --header 'Authorization: Bearer x'

Commands:
  list --live|--stuck|--undelivered|--mismatch|--failed
       [--principal p] [--conversation c] [--since <ISO time>] [--limit 1..500]
                         the turns in that state, newest first
  show <turnId>          one turn, its principal and its events
  end <turnId> --reason "<text>"
                         ends a live turn failed/ended_by_operator (its producer stops)

Options:
  --header 'Name: value' send this header on every request (repeatable): the operator's credentials
  --json                 print the server's answer as JSON
  --timeout <ms>         longest wait for one answer (default 30000)
  -h, --help             print this help

Exit code: 0 done (list: nothing in a problem state), 1 list found stuck, undelivered,
mismatched or failed turns, or the turn is unknown, 2 bad usage, 3 the server is
unreachable, refused the credentials or has the operator API off (404 not_found), or
answered another error.`;

export type AdminCommand =
  | { kind: 'help' }
  | { kind: 'list'; state: OperatorState; query: Record<string, string> }
  | { kind: 'show'; turnId: string }
  | { kind: 'end'; turnId: string; reason: string };

export interface AdminInvocation {
  baseUrl: string;
  command: AdminCommand;
  headers: Record<string, string>;
  json: boolean;
  timeoutMs: number;
}

const STATES: readonly OperatorState[] = ['live', 'stuck', 'undelivered', 'mismatch', 'failed'];
function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      ...Object.fromEntries(STATES.map((state) => [state, { type: 'boolean' as const }])),
      principal: { type: 'string' },
      conversation: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
      reason: { type: 'string' },
      header: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function turnIdOf(positionals: readonly string[], verb: string): string {
  if (positionals.length !== 3) throw usage(`${verb} takes one turn id.`);
  const turnId = positionals[2] as string;
  if (!ID_PATTERN.test(turnId)) throw usage(`${JSON.stringify(turnId)} is not a turn id.`);
  return turnId;
}

function listCommand(values: Record<string, unknown>, positionals: readonly string[]): AdminCommand {
  if (positionals.length !== 2) throw usage('list takes no more arguments, only options.');
  const chosen = STATES.filter((state) => values[state] === true);
  if (chosen.length !== 1) throw usage('list takes exactly one of --live, --stuck, --undelivered, --mismatch, --failed.');
  const query: Record<string, string> = {};
  for (const name of ['principal', 'conversation', 'since', 'limit'] as const) {
    const value = values[name];
    if (typeof value === 'string') query[name] = value;
  }
  return { kind: 'list', state: chosen[0] as OperatorState, query };
}

/** Parses `argv` (without node and the script); throws `invalid_argument` on bad usage. */
export function parseAdminArgs(argv: readonly string[]): AdminInvocation {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (cause) {
    throw usage(String((cause as Error)?.message ?? cause));
  }
  const { values, positionals } = parsed;
  const headers = Object.fromEntries(((values.header as string[] | undefined) ?? []).map(headerOf));
  const json = values.json === true;
  const timeout = values.timeout as string | undefined;
  if (timeout !== undefined && !(/^[0-9]{1,9}$/.test(timeout) && Number(timeout) > 0)) throw usage(`--timeout takes a positive number of milliseconds, not ${JSON.stringify(timeout)}.`);
  const common = { headers, json, timeoutMs: timeout === undefined ? 30_000 : Number(timeout) };
  if (values.help) return { baseUrl: '', command: { kind: 'help' }, ...common };
  const [baseUrl, verb] = positionals;
  if (baseUrl === undefined || !/^https?:\/\//.test(baseUrl)) throw usage('Give the base URL of the server first (http:// or https://).');
  let command: AdminCommand;
  if (verb === 'list') command = listCommand(values, positionals);
  else if (verb === 'show') command = { kind: 'show', turnId: turnIdOf(positionals, 'show') };
  else if (verb === 'end') {
    const reason = values.reason as string | undefined;
    if (reason === undefined || reason.trim() === '') throw usage('end needs --reason "<why>": it is logged and audited.');
    command = { kind: 'end', turnId: turnIdOf(positionals, 'end'), reason };
  } else throw usage(verb === undefined ? 'Give a command: list, show or end.' : `Unknown command ${JSON.stringify(verb)}.`);
  return { baseUrl, command, ...common };
}
