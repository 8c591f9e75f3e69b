/** The page's preamble: every error answer has the typed body. Runs last, over every error the run saw. */
import { CheckFailure } from '../check.js';
import type { Check } from '../run-context.js';
import { errorBodyProblem, request } from '../http.js';

const errorBodies: Check = {
  id: 's0.error-bodies',
  title: 'every error answer of the run is JSON {"error":{"code":"snake_case_code","message":"…"}}',
  rule: 'Preamble "Every error response has the body {"error":{"code":"snake_case_code","message":"human readable"}}"',
  async run(context) {
    // Errors of its own, so the check has something to judge under --only s0 too.
    const unknown = `unknown_${context.options.runId}`;
    await request(context.http, 'GET', `/turns/${unknown}`);
    await request(context.http, 'GET', `/turns/${unknown}/events`, { headers: { accept: 'text/event-stream' } });
    await request(context.http, 'POST', `/turns/${unknown}/cancel`);
    for (const answer of context.errorAnswers) {
      const problem = errorBodyProblem(answer);
      if (problem !== undefined) throw new CheckFailure(`${answer.method} ${answer.path} answered ${answer.status} but ${problem}`);
    }
    return `${context.errorAnswers.length} error answers checked`;
  },
};

export const generalChecks: readonly Check[] = [errorBodies];
