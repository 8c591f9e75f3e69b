/** The routes of docs/protocol.md, matched on the path below the base path. */
export type Route =
  | { kind: 'submit'; conversationId: string }
  | { kind: 'list'; conversationId: string }
  | { kind: 'follow'; turnId: string }
  | { kind: 'replay'; turnId: string }
  | { kind: 'cancel'; turnId: string }
  | { kind: 'delivered'; turnId: string }
  | { kind: 'healthz' };

/** The operator API's routes (section 11), below `/operator`. */
export type OperatorRoute = { kind: 'operator-list' } | { kind: 'operator-show'; turnId: string } | { kind: 'operator-end'; turnId: string };

/** The one method each route answers; others get `405` with this as `Allow`. */
export const ALLOWED_METHOD: Record<Route['kind'] | OperatorRoute['kind'], string> = {
  submit: 'POST',
  list: 'GET',
  follow: 'GET',
  replay: 'GET',
  cancel: 'POST',
  delivered: 'POST',
  'operator-list': 'GET',
  'operator-show': 'GET',
  'operator-end': 'POST',
  healthz: 'GET',
};

/** True for every path below `/operator`: all of them answer 404 unless an operator is allowed. */
export function isOperatorPath(path: string): boolean {
  return path === '/operator' || path.startsWith('/operator/');
}

export function matchOperatorRoute(path: string): OperatorRoute | undefined {
  const parts = path.split('/');
  if (parts[1] !== 'operator' || parts[2] !== 'turns') return undefined;
  if (parts.length === 3) return { kind: 'operator-list' };
  const id = parts[3];
  if (id === undefined || id === '') return undefined;
  if (parts.length === 4) return { kind: 'operator-show', turnId: id };
  if (parts.length === 5 && parts[4] === 'end') return { kind: 'operator-end', turnId: id };
  return undefined;
}

/** `''`, or the base path with one leading slash and no trailing one. */
export function normalizeBasePath(basePath: string): string {
  if (basePath === '' || basePath === '/') return '';
  const withSlash = basePath.startsWith('/') ? basePath : `/${basePath}`;
  return withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}

export function matchRoute(path: string): Route | undefined {
  const parts = path.split('/');
  if (parts[0] !== '') return undefined;
  const [, collection, id, action] = parts;
  // Readiness for load balancers: 200 while this instance takes turns and its log answers.
  if (parts.length === 2 && collection === 'healthz') return { kind: 'healthz' };
  // An empty segment names nothing: `/turns/` is no route, while `/turns/a.b` is a route with a bad id.
  if (id === undefined || id === '' || action === '') return undefined;
  if (parts.length === 3 && collection === 'turns') return { kind: 'replay', turnId: id };
  if (parts.length !== 4) return undefined;
  if (collection === 'conversations' && action === 'messages') return { kind: 'submit', conversationId: id };
  if (collection === 'conversations' && action === 'turns') return { kind: 'list', conversationId: id };
  if (collection === 'turns' && action === 'events') return { kind: 'follow', turnId: id };
  if (collection === 'turns' && action === 'cancel') return { kind: 'cancel', turnId: id };
  if (collection === 'turns' && action === 'delivered') return { kind: 'delivered', turnId: id };
  return undefined;
}
