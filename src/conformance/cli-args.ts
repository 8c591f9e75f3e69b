/** The command line of `lifeline-chat-conformance`, parsed into {@link ConformanceOptions}. */
import { parseArgs } from 'node:util';
import { LifelineError } from '../errors.js';
import type { ConformanceOptions } from './context.js';

export const USAGE = `Usage: lifeline-chat-conformance <base-url> [options]

Checks a server against the Lifeline wire protocol 1.2 over HTTP.
Example: lifeline-chat-conformance http://127.0.0.1:8787/api

Options:
  --only s2,s3           run only these sections (s0–s5, s9, s10, s11) or check ids (s2.seq-contiguous)
  --header 'Name: value' send this header on every request (repeatable)
  --operator-header 'Name: value'
                         the operator's credentials, for section 11 (repeatable; without it s11 is skipped)
  --json                 print the report as JSON instead of one line per check
  --timeout <ms>         longest wait for one answer (default 10000)
  --turn-timeout <ms>    longest wait for a followed turn to end (default 30000)
  --pause <ms>           quiet pause asked of the conformance agent (default 2.5 x Lifeline-Heartbeat)
  --slack <ms>           silence allowed beyond the heartbeat interval (default max(1000, interval))
  --hold <ms>            how long a turn to be cancelled stays live (default 30000)
  -h, --help             print this help

Checks that need the conformance agent (docs/conformance.md) are skipped when the
server does not run it. Exit code: 0 when nothing failed, 1 on any failure, 2 on bad usage.`;

export interface CliCommand {
  help: boolean;
  json: boolean;
  options: ConformanceOptions;
}

/** A bad command line, as both CLIs report it. */
export const usage = (message: string): LifelineError => new LifelineError('invalid_argument', message);

function milliseconds(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,9}$/.test(value) || Number(value) <= 0) throw usage(`--${name} takes a positive number of milliseconds, not ${JSON.stringify(value)}.`);
  return Number(value);
}

/** One `--header 'Name: value'`, name lowercased; shared by `lifeline-chat-conformance` and `lifeline-chat-admin`. */
export function headerOf(raw: string): [string, string] {
  const colon = raw.indexOf(':');
  const name = colon === -1 ? '' : raw.slice(0, colon).trim();
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw usage(`--header ${JSON.stringify(raw)} is not "Name: value".`);
  return [name.toLowerCase(), raw.slice(colon + 1).trim()];
}

/** Parses `argv` (without node and the script); throws `invalid_argument` on bad usage. */
export function parseCliArgs(argv: readonly string[]): CliCommand {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (cause) {
    throw usage(String((cause as Error)?.message ?? cause));
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true, json: false, options: { baseUrl: '' } };
  if (positionals.length !== 1) throw usage(positionals.length === 0 ? 'Give the base URL of the server.' : `One base URL, not ${positionals.length} arguments.`);
  const headers = Object.fromEntries((values.header ?? []).map(headerOf));
  const numbers = {
    timeoutMs: milliseconds('timeout', values.timeout),
    turnTimeoutMs: milliseconds('turn-timeout', values['turn-timeout']),
    pauseMs: milliseconds('pause', values.pause),
    slackMs: milliseconds('slack', values.slack),
    holdMs: milliseconds('hold', values.hold),
  };
  const options: ConformanceOptions = { baseUrl: positionals[0] as string, headers };
  if (values['operator-header'] !== undefined) options.operatorHeaders = Object.fromEntries(values['operator-header'].map(headerOf));
  for (const [key, value] of Object.entries(numbers)) if (value !== undefined) Object.assign(options, { [key]: value });
  if (values.only !== undefined) options.only = values.only.split(',').map((part) => part.trim()).filter((part) => part !== '');
  return { help: false, json: values.json === true, options };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      only: { type: 'string' },
      header: { type: 'string', multiple: true },
      'operator-header': { type: 'string', multiple: true },
      json: { type: 'boolean' },
      timeout: { type: 'string' },
      'turn-timeout': { type: 'string' },
      pause: { type: 'string' },
      slack: { type: 'string' },
      hold: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
