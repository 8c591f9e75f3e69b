import { ID_PATTERN, RESUME_POINT_PATTERN } from '../../protocol/schemas.js';
import { HttpError } from './responses.js';

/** Throws `400 invalid_id` unless `id` matches the protocol's id pattern. */
export function checkId(id: string, what: string): void {
  if (!ID_PATTERN.test(id)) throw new HttpError(400, 'invalid_id', `The ${what} must match ^[A-Za-z0-9_-]{1,128}$.`);
}

/** A resume point: 1–15 decimal digits and nothing else. */
function parseResumePoint(value: string, source: string): number {
  if (!RESUME_POINT_PATTERN.test(value)) {
    throw new HttpError(400, 'invalid_resume_point', `${source} must be 1 to 15 decimal digits.`);
  }
  return Number(value);
}

/** Header `Last-Event-ID` (follow only) wins over query `after`; neither means 0. */
export function resumePoint(header: string | null, url: URL): number {
  if (header !== null) return parseResumePoint(header, 'Last-Event-ID');
  const query = url.searchParams.get('after');
  if (query !== null) return parseResumePoint(query, 'The after parameter');
  return 0;
}

/** Query `limit`: an integer from 1 to `max`, `fallback` when absent. */
export function parseLimit(url: URL, fallback: number, max: number): number {
  const raw = url.searchParams.get('limit');
  if (raw === null) return fallback;
  const value = /^[0-9]{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1 && value <= max)) throw new HttpError(400, 'invalid_limit', `limit must be an integer from 1 to ${max}.`);
  return value;
}
