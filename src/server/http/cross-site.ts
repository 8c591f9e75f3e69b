import { HttpError } from './responses.js';

/**
 * Which other origins may call the API from a browser. Without it only same-origin pages
 * (and non-browser clients) may change anything.
 */
export interface CorsOptions {
  /**
   * Origins allowed to call the API, exactly as browsers send them
   * (`https://app.example.com`, no trailing slash), or a predicate. `'*'` allows any
   * origin: only sensible without credentials and with token auth.
   */
  origins: readonly string[] | '*' | ((origin: string) => boolean);
  /**
   * Allow cookies (and HTTP auth) on cross-origin requests: answers
   * `Access-Control-Allow-Credentials: true`, and always names the origin, never `*`.
   * Needed when the app's `fetch` uses `credentials: 'include'`. Default false.
   */
  credentials?: boolean;
  /** How long a browser may cache a preflight answer, seconds. Default 600. */
  maxAgeSeconds?: number;
}

/** Methods that only read; every other method changes something and is checked. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Headers the client sends (`authorization` and any app header are echoed from the preflight). */
const ALLOWED_HEADERS = 'content-type, idempotency-key, last-event-id, authorization';
/** Response headers a cross-origin client needs to read. */
const EXPOSED_HEADERS = 'lifeline-heartbeat, retry-after, idempotent-replayed';

function isJsonContentType(value: string): boolean {
  const type = value.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** Cross-origin policy of one handler: preflights, response headers, and refusals. */
export class CrossSitePolicy {
  readonly #cors: CorsOptions | undefined;

  constructor(cors: CorsOptions | undefined) {
    this.#cors = cors;
  }

  /** True when `origin` may call the API cross-origin. */
  allows(origin: string | null): origin is string {
    const origins = this.#cors?.origins;
    if (origin === null || origin === 'null' || origins === undefined) return false;
    if (origins === '*') return true;
    if (typeof origins === 'function') return origins(origin);
    return origins.includes(origin);
  }

  /**
   * Refuses what a browser sends to a state-changing route without a preflight
   * (docs/faults.md #52): a body declared as anything but JSON (a form or `text/plain`
   * post), or a request the browser marks as coming from another site
   * (`Sec-Fetch-Site: cross-site` or `same-site`) from an origin `cors` does not allow.
   * A request with no body and no content type (a cancel) is a simple request too, so
   * the second rule is what protects it; every current browser sends `Sec-Fetch-Site`.
   */
  check(request: Request): void {
    if (SAFE_METHODS.has(request.method)) return;
    const type = request.headers.get('content-type');
    if (type !== null && !isJsonContentType(type)) {
      throw new HttpError(400, 'unsupported_media_type', 'Content-Type must be application/json.');
    }
    const site = request.headers.get('sec-fetch-site');
    if ((site === 'cross-site' || site === 'same-site') && !this.allows(request.headers.get('origin'))) {
      throw new HttpError(403, 'cross_site_request', 'Requests from another site must come from an origin the server allows (its cors option).');
    }
  }

  /** The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`), or undefined when it is none. */
  preflight(request: Request): Response | undefined {
    if (request.method !== 'OPTIONS' || !request.headers.has('access-control-request-method')) return undefined;
    const origin = request.headers.get('origin');
    if (!this.allows(origin)) {
      throw new HttpError(403, 'cross_site_request', 'This origin may not call the API (the server\'s cors option).', { vary: 'origin' });
    }
    const requested = request.headers.get('access-control-request-headers');
    const headers = new Headers({
      ...this.#originHeaders(origin),
      'access-control-allow-methods': 'GET, HEAD, POST',
      'access-control-allow-headers': requested ? `${ALLOWED_HEADERS}, ${requested}` : ALLOWED_HEADERS,
      'access-control-max-age': String(this.#cors?.maxAgeSeconds ?? 600),
    });
    return new Response(null, { status: 204, headers });
  }

  /** `response` with the CORS headers an allowed origin needs to read it. */
  decorate(request: Request, response: Response): Response {
    if (this.#cors === undefined) return response;
    const origin = request.headers.get('origin');
    // Answers differ by origin: caches must keep them apart.
    response.headers.append('vary', 'origin');
    if (!this.allows(origin)) return response;
    for (const [name, value] of Object.entries(this.#originHeaders(origin))) response.headers.set(name, value);
    response.headers.set('access-control-expose-headers', EXPOSED_HEADERS);
    return response;
  }

  #originHeaders(origin: string): Record<string, string> {
    const headers: Record<string, string> = { 'access-control-allow-origin': origin, vary: 'origin' };
    if (this.#cors?.credentials === true) headers['access-control-allow-credentials'] = 'true';
    return headers;
  }
}
