/**
 * What the example server says of its settings (`GET /__example/config`, support-env.ts):
 * whether the operator API is on, its windows, and the development-only principal header.
 * Asked once per page.
 */
import type { ExampleConfig } from '../support-env.js';

export type { ExampleConfig };

let asked: Promise<ExampleConfig> | undefined;

export function exampleConfig(): Promise<ExampleConfig> {
  asked ??= fetch('/__example/config').then(async (response) => {
    if (!response.ok) throw new Error(`GET /__example/config answered ${response.status}`);
    return (await response.json()) as ExampleConfig;
  });
  return asked;
}

/** `?user=` in the page URL: who this page claims to be when the server names principals by a header. */
export function userFromUrl(): string | undefined {
  const user = new URLSearchParams(location.search).get('user');
  return user !== null && user !== '' ? user : undefined;
}

/**
 * The request headers naming `user` (from `?user=`), when the server runs with PRINCIPAL_HEADER;
 * none otherwise (everyone is `anonymous`).
 */
export async function principalHeaders(user: string): Promise<Record<string, string>> {
  const { principalHeader } = await exampleConfig();
  return principalHeader ? { [principalHeader]: user } : {};
}
