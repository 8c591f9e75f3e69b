/**
 * The one failure classification (core/failure-policy.ts), checked as a rule over every
 * status, server code and request kind rather than a few examples.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyHttpFailure, dispositionOf, thrownFailure, type FailureDisposition, type RequestKind } from '../../../src/core/failure-policy.js';
import { isProtocolError, isTransportError } from '../../../src/errors.js';

const DISPOSITIONS: readonly FailureDisposition[] = ['retry', 'auth', 'rebuild', 'fatal'];
const status = fc.integer({ min: 100, max: 599 });
const kind = fc.constantFrom<RequestKind>('submit', 'read');
const serverCode = fc.option(fc.constantFrom('resume_point_ahead', 'idempotency_key_reused', 'overloaded', 'turn_not_found'), { nil: undefined });
/** docs/protocol.md section 7: retried whatever the request and the server's code. */
const alwaysRetried = (code: number): boolean => code >= 500 || code === 408 || code === 425 || code === 429;

describe('dispositionOf', () => {
  it('maps every status to exactly one disposition, and the error agrees with it', () => {
    fc.assert(
      fc.property(status, kind, serverCode, fc.option(fc.nat(), { nil: undefined }), (code, k, server, retryAfterMs) => {
        const disposition = dispositionOf(code, k, server);
        expect(DISPOSITIONS.filter((d) => d === disposition)).toHaveLength(1);
        const failure = classifyHttpFailure(k, { status: code, serverCode: server, retryAfterMs });
        expect(failure.disposition).toBe(disposition);
        expect([failure.error.status, failure.error.serverCode]).toEqual([code, server]);
      }),
    );
  });

  it('retries 5xx, 408, 425 and 429 for every request, whatever the server code', () => {
    fc.assert(
      fc.property(status.filter(alwaysRetried), kind, serverCode, (code, k, server) => {
        expect(dispositionOf(code, k, server)).toBe('retry');
      }),
    );
  });

  it('never retries another status, except 409 for a submission', () => {
    fc.assert(
      fc.property(status.filter((code) => !alwaysRetried(code)), kind, serverCode, (code, k, server) => {
        expect(dispositionOf(code, k, server) === 'retry').toBe(code === 409 && k === 'submit');
      }),
    );
  });

  it('a submission is retried or rejected, never re-authenticated or rebuilt', () => {
    fc.assert(
      fc.property(status, serverCode, (code, server) => {
        const failure = classifyHttpFailure('submit', { status: code, serverCode: server });
        expect(['retry', 'fatal']).toContain(failure.disposition);
        expect(failure.disposition === 'fatal').toBe(failure.error.code === 'submission_rejected');
      }),
    );
  });

  it('a read re-authenticates on 401/403 and rebuilds when the log is behind the client', () => {
    expect(dispositionOf(401, 'read')).toBe('auth');
    expect(dispositionOf(403, 'read')).toBe('auth');
    const behind = classifyHttpFailure('read', { status: 400, serverCode: 'resume_point_ahead' });
    expect([isProtocolError(behind.error), behind.error.code, behind.disposition]).toEqual([true, 'seq_mismatch', 'rebuild']);
    expect(dispositionOf(404, 'read')).toBe('fatal');
  });

  it('keeps Retry-After on the failure, and names the statuses that have a code', () => {
    expect(classifyHttpFailure('read', { status: 503, retryAfterMs: 2_000 })).toMatchObject({ disposition: 'retry', retryAfterMs: 2_000 });
    const codes = [401, 403, 404, 408, 410, 418, 429, 503].map((code) => classifyHttpFailure('read', { status: code }).error.code);
    expect(codes).toEqual(['unauthorized', 'forbidden', 'turn_not_found', 'timeout', 'turn_expired', 'http_error', 'rate_limited', 'server_unavailable']);
  });
});

describe('thrownFailure', () => {
  it('retries anything thrown: a timeout as timeout, the rest as network_error, keeping the cause', () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.string().map((message) => new TypeError(message))), (cause) => {
        fc.pre(!['TimeoutError', 'AbortError'].includes(String((cause as { name?: unknown } | null)?.name)));
        const failure = thrownFailure(cause);
        expect([isTransportError(failure.error), failure.error.code, failure.disposition]).toEqual([true, 'network_error', 'retry']);
        expect(failure.error.cause).toBe(cause);
      }),
    );
    for (const name of ['TimeoutError', 'AbortError']) expect(thrownFailure(new DOMException('x', name)).error.code).toBe('timeout');
  });
});
