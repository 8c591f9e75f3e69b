/**
 * The example server's support settings (examples/chat/support-env.ts): the environment
 * read strictly (a malformed window or header name stops the start, never a silent default),
 * the operator token checked exactly, the principal header only when asked for, and the
 * page's config never carrying the token. Needs the built package (the example imports
 * `lifeline-chat/server`): `npm run build`.
 */
import { describe, expect, it } from 'vitest';
import { exampleConfig, supportHandlerOptions, supportSettingsFromEnv } from '../../../examples/chat/support-env.js';

const request = (headers: Record<string, string>) => new Request('http://example/api/operator/turns?state=stuck', { headers });

describe('example support settings', () => {
  it('reads OPERATOR_TOKEN, the two windows and PRINCIPAL_HEADER', () => {
    const settings = supportSettingsFromEnv({ OPERATOR_TOKEN: 's3cret', STUCK_AFTER_MS: '5000', UNDELIVERED_AFTER_MS: '7000', PRINCIPAL_HEADER: 'x-example-user' });
    expect(settings).toEqual({ operatorToken: 's3cret', stuckAfterMs: 5000, undeliveredAfterMs: 7000, principalHeader: 'x-example-user' });
    expect(exampleConfig(settings)).toEqual({ operatorApi: true, stuckAfterMs: 5000, undeliveredAfterMs: 7000, principalHeader: 'x-example-user' });
    expect(JSON.stringify(exampleConfig(settings))).not.toContain('s3cret');
  });

  it('leaves the operator API off and the principals alone when nothing is set', () => {
    const settings = supportSettingsFromEnv({});
    expect(settings).toEqual({});
    expect(supportHandlerOptions(settings)).toEqual({});
    expect(exampleConfig(settings)).toEqual({ operatorApi: false, stuckAfterMs: 60_000, undeliveredAfterMs: 60_000, principalHeader: null });
  });

  it.each([
    ['STUCK_AFTER_MS', '5s'],
    ['STUCK_AFTER_MS', '0'],
    ['UNDELIVERED_AFTER_MS', '-1'],
    ['UNDELIVERED_AFTER_MS', '1.5'],
    ['PRINCIPAL_HEADER', 'x user'],
  ])('refuses %s=%s at start', (name, value) => {
    expect(() => supportSettingsFromEnv({ [name]: value })).toThrow(name);
  });

  it('accepts exactly `Bearer <token>` as an operator', async () => {
    const { authorizeOperator } = supportHandlerOptions({ operatorToken: 's3cret' });
    expect(await authorizeOperator!(request({ authorization: 'Bearer s3cret' }))).toBe('support');
    for (const authorization of ['Bearer s3cre', 'Bearer s3cret2', 'bearer s3cret', 's3cret', '']) {
      expect(() => authorizeOperator!(request({ authorization }))).toThrow();
    }
  });

  it('names the principal by the configured header, anonymous without it', async () => {
    const { authorize } = supportHandlerOptions({ principalHeader: 'x-example-user' });
    expect(await authorize!(request({ 'x-example-user': 'alice' }))).toBe('alice');
    expect(await authorize!(request({}))).toBe('anonymous');
  });
});
