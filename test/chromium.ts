/**
 * The Chromium every browser test and benchmark launches: Debian's package at
 * /usr/bin/chromium when it exists (this project's machines; `LIFELINE_CHROMIUM`
 * overrides), else Playwright's own browser. The flags keep a headless Chromium off the
 * network this machine does not have (no background fetches, no updates, no sync).
 */
import { existsSync } from 'node:fs';

const systemChromium = '/usr/bin/chromium';

/** Path to launch, or `undefined` to let Playwright use its own browser. */
export const chromiumExecutable: string | undefined =
  process.env['LIFELINE_CHROMIUM'] ?? (existsSync(systemChromium) ? systemChromium : undefined);

export const CHROMIUM_FLAGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
