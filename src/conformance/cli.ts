#!/usr/bin/env node
/** `lifeline-chat-conformance <base-url>`: runs the suite and prints one line per check (or JSON). */
import { isLifelineError } from '../errors.js';
import { parseCliArgs, USAGE } from './cli-args.js';
import { formatJson, formatResult, formatSummary } from './report.js';
import { runConformance } from './run.js';

async function main(argv: readonly string[]): Promise<number> {
  let command: ReturnType<typeof parseCliArgs>;
  try {
    command = parseCliArgs(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (command.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { json, options } = command;
  try {
    const report = await runConformance({
      ...options,
      ...(json ? {} : { onResult: (result) => process.stdout.write(`${formatResult(result)}\n`) }),
    });
    process.stdout.write(json ? `${formatJson(report)}\n` : `${formatSummary(report)}\n`);
    return report.ok ? 0 : 1;
  } catch (error) {
    if (!isLifelineError(error)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
