#!/usr/bin/env node
/** `lifeline-chat-admin <base-url> list|show|end`: the operator API (docs/protocol.md section 11) from a shell. */
import { parseAdminArgs, USAGE, type AdminInvocation } from './args.js';
import { formatList, formatTurn } from './format.js';
import { operatorRequest } from './request.js';

/** Exit codes a script can branch on (documented in USAGE). */
const OK = 0;
const FOUND = 1;
const BAD_USAGE = 2;
const UNREACHABLE = 3;

async function run(invocation: AdminInvocation): Promise<number> {
  const { command, json } = invocation;
  if (command.kind === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return OK;
  }
  const answer = await operatorRequest(invocation);
  if (answer.kind === 'unreachable') {
    process.stderr.write(`${answer.message}\n`);
    return UNREACHABLE;
  }
  if (answer.kind === 'error') {
    process.stderr.write(`${answer.status} ${answer.code}: ${answer.message}\n`);
    if (answer.status === 404 && answer.code === 'turn_not_found') return FOUND;
    // The operator API is off, or refused these credentials: the server says no more than 404.
    return answer.status === 400 ? BAD_USAGE : UNREACHABLE;
  }
  const body = answer.body as { turns?: unknown[]; turn?: unknown; events?: unknown[] };
  process.stdout.write(json ? `${JSON.stringify(body, null, 2)}\n` : `${command.kind === 'list' ? formatList(body) : formatTurn(body)}\n`);
  if (command.kind === 'list') return command.state !== 'live' && (body.turns?.length ?? 0) > 0 ? FOUND : OK;
  return OK;
}

async function main(argv: readonly string[]): Promise<number> {
  let invocation: AdminInvocation;
  try {
    invocation = parseAdminArgs(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return BAD_USAGE;
  }
  return run(invocation);
}

process.exitCode = await main(process.argv.slice(2));
