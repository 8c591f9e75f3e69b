/**
 * The handler where it is mounted by a platform rather than run as a server: `waitUntil`
 * (a serverless invocation kept alive past its 202 until the producer is done) and the
 * 404 that names the base path it serves (the mismatch a mounted route makes easy).
 */
import { describe, expect, it } from 'vitest';
import { errorBodySchema, submitAnswerSchema } from '../../../src/protocol/schemas.js';
import { createLifelineHandler } from '../../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../../src/server/log/memory/index.js';
import { controlledAgent, textAgent } from '../../fixtures/agents.js';
import { newKey } from '../../fixtures/server.js';

const ORIGIN = 'http://lifeline.test';

function submitRequest(path: string, key = newKey()): Request {
  return new Request(`${ORIGIN}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ content: 'hi' }),
  });
}

describe('waitUntil', () => {
  it('is handed the producer before the 202, pending while the turn is live and fulfilled once turn.end is logged', async () => {
    const log = createMemoryTurnLog();
    const control = controlledAgent();
    const handed: Promise<unknown>[] = [];
    const handler = createLifelineHandler({ agent: control.agent, store: log, waitUntil: (promise) => handed.push(promise), onError: () => undefined });

    const key = newKey();
    const response = await handler(submitRequest('/conversations/c1/messages', key));
    expect(response.status).toBe(202);
    expect(handed).toHaveLength(1);
    const { turnId } = submitAnswerSchema.parse(await response.json());

    let settled = false;
    const done = handed[0]!.then(() => (settled = true));
    const turn = await control.nextTurn();
    await turn.delta('Hel');
    await turn.delta('lo');
    // The answer went out and the agent is still producing: the platform must keep waiting.
    expect(settled).toBe(false);
    expect((await log.read(turnId, 0, 100)).events.map((event) => event.type)).not.toContain('turn.end');

    // A retry of the same submission starts nothing, so it hands over nothing new.
    expect((await handler(submitRequest('/conversations/c1/messages', key))).status).toBe(200);
    expect(handed).toHaveLength(1);

    await turn.end();
    await done;
    const page = await log.read(turnId, 0, 100);
    expect(page.events.at(-1)).toMatchObject({ type: 'turn.end', status: 'complete' });
    await handler.close();
  });

  it('is handed a promise that fulfils, not rejects, when the agent throws', async () => {
    const log = createMemoryTurnLog();
    const handed: Promise<unknown>[] = [];
    const agent = async function* (): AsyncGenerator<never> {
      throw new Error('model down');
    };
    const handler = createLifelineHandler({ agent, store: log, waitUntil: (promise) => handed.push(promise), onError: () => undefined });
    const response = await handler(submitRequest('/conversations/c1/messages'));
    const { turnId } = submitAnswerSchema.parse(await response.json());
    await expect(handed[0]).resolves.toBeUndefined();
    expect((await log.read(turnId, 0, 100)).events.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed' });
    await handler.close();
  });
});

describe('404 under the handler', () => {
  async function notFound(handler: (request: Request) => Promise<Response>, path: string, init?: RequestInit): Promise<string> {
    const response = await handler(new Request(`${ORIGIN}${path}`, init));
    expect(response.status).toBe(404);
    const body = errorBodySchema.parse(await response.json());
    expect(body.error.code).toBe('not_found');
    return body.error.message;
  }

  it('names the base path it serves and the path it was asked for', async () => {
    // A Next.js catch-all at /api/lifeline/[...path] with the handler's basePath left at /api.
    const handler = createLifelineHandler({ agent: textAgent('x'), basePath: '/api', onError: () => undefined });
    const message = await notFound(handler, '/api/lifeline/conversations/c1/messages', { method: 'POST' });
    expect(message).toContain('/api/lifeline/conversations/c1/messages');
    expect(message).toContain('basePath "/api"');
    expect(message).toContain('/api/conversations/{id}/messages');
    // Outside the base path altogether: the same hint.
    expect(await notFound(handler, '/lifeline/turns/t1/events')).toContain('basePath "/api"');
    await handler.close();

    const root = createLifelineHandler({ agent: textAgent('x'), onError: () => undefined });
    expect(await notFound(root, '/api/turns/t1/events')).toContain('at the root (basePath "")');
    await root.close();
  });

  it('says the same below /operator while the operator API is off, so it still leaks nothing', async () => {
    const handler = createLifelineHandler({ agent: textAgent('x'), basePath: '/api', onError: () => undefined });
    const operator = await notFound(handler, '/api/operator/turns');
    const unknown = await notFound(handler, '/api/elsewhere/turns');
    expect(operator.replace('/api/operator/turns', '<path>')).toBe(unknown.replace('/api/elsewhere/turns', '<path>'));
    await handler.close();
  });
});
