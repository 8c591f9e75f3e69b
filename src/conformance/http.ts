/**
 * Plain HTTP for the suite: every request carries the user's headers, is bounded by a
 * timeout, and every error answer is kept so the preamble's error-body rule can be
 * checked over the whole run, not only where a check looked.
 */
import { CheckFailure, clip, expect } from './check.js';

/** A finished non-streaming answer. */
export interface Answer {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  text: string;
}

/** What the request layer needs from the run. */
export interface HttpSettings {
  baseUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Receives every answer with status ≥ 400. */
  onErrorAnswer(answer: Answer): void;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Sent as is (already JSON text, or deliberately broken). */
  body?: string;
}

/** `baseUrl` + `path`, keeping the base's own path (`http://h/api` + `/turns/x`). */
export function urlOf(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${path}`;
}

/** Sends one request and reads the whole answer within the timeout. */
export async function request(http: HttpSettings, method: string, path: string, options: RequestOptions = {}): Promise<Answer> {
  const signal = AbortSignal.timeout(http.timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await fetch(urlOf(http.baseUrl, path), {
      method,
      headers: { ...http.headers, ...options.headers },
      ...(options.body === undefined ? {} : { body: options.body }),
      signal,
      redirect: 'manual',
    });
    text = await response.text();
  } catch (cause) {
    throw new CheckFailure(`${method} ${path}: ${describeFailure(cause, http.timeoutMs)}`);
  }
  const answer: Answer = { method, path, status: response.status, headers: response.headers, text };
  if (answer.status >= 400) http.onErrorAnswer(answer);
  return answer;
}

/** A network failure or timeout in words. */
export function describeFailure(cause: unknown, timeoutMs: number): string {
  const error = cause as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (error?.name === 'TimeoutError' || error?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const detail = error?.cause?.code ?? error?.cause?.message ?? '';
  return `request failed: ${error?.message ?? String(cause)}${detail ? ` (${detail})` : ''}`;
}

/** `POST` with a JSON body and `Content-Type: application/json`. */
export function postJson(http: HttpSettings, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return request(http, 'POST', path, { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** The answer's body as JSON; fails the check when it is not JSON. */
export function jsonOf(answer: Answer): unknown {
  try {
    return JSON.parse(answer.text) as unknown;
  } catch {
    throw new CheckFailure(`${answer.method} ${answer.path} answered ${answer.status} with a body that is not JSON: ${clip(answer.text)}`);
  }
}

/** Fails unless the answer has `status` (the answer is shown when not). */
export function expectStatus(answer: Answer, status: number | readonly number[]): void {
  const allowed = typeof status === 'number' ? [status] : status;
  if (!allowed.includes(answer.status)) {
    throw new CheckFailure(`${answer.method} ${answer.path} answered ${answer.status}, expected ${allowed.join(' or ')}: ${clip(answer.text)}`);
  }
}

/** Fails unless the Content-Type is `type` (parameters such as charset allowed). */
export function expectContentType(answer: Answer, type: string): void {
  const value = answer.headers.get('content-type') ?? '';
  const bare = value.split(';')[0]?.trim().toLowerCase();
  expect(bare === type, `${answer.method} ${answer.path} answered Content-Type ${JSON.stringify(value)}, expected ${type}`);
}

const ERROR_CODE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/**
 * The reason `answer` is not an error of the protocol's shape
 * (`{"error":{"code":"snake_case_code","message":"human readable"}}` as JSON), or `undefined`.
 */
export function errorBodyProblem(answer: Answer): string | undefined {
  const type = (answer.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') return `Content-Type is ${JSON.stringify(answer.headers.get('content-type'))}, not application/json`;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `the body is not JSON: ${clip(answer.text)}`;
  }
  const error = (body as { error?: unknown } | null)?.error as { code?: unknown; message?: unknown } | undefined;
  if (typeof error !== 'object' || error === null) return `the body has no "error" object: ${clip(answer.text)}`;
  if (typeof error.code !== 'string' || !ERROR_CODE.test(error.code)) return `error.code is not a snake_case string: ${clip(answer.text)}`;
  if (typeof error.message !== 'string' || error.message === '') return `error.message is not a non-empty string: ${clip(answer.text)}`;
  return undefined;
}

/** Fails unless the answer is `status` with the typed error body carrying `code`. */
export function expectError(answer: Answer, status: number, code: string): void {
  expectStatus(answer, status);
  const problem = errorBodyProblem(answer);
  if (problem !== undefined) throw new CheckFailure(`${answer.method} ${answer.path} answered ${status} but ${problem}`);
  const actual = (JSON.parse(answer.text) as { error: { code: string } }).error.code;
  expect(actual === code, `${answer.method} ${answer.path} answered ${status} with code ${actual}, expected ${code}`);
}
