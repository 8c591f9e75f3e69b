// Types of scripts/preflight.mjs for its unit test.
export type Tool = 'chromium' | 'redis-server';
export interface Machine {
  missing: string[];
  root: boolean;
  sudo: boolean;
  aptGet: boolean;
  os: string;
}
export type Plan = { kind: 'ok' } | { kind: 'install'; commands: string[][]; hint: string } | { kind: 'stop'; line: string };
export function onPath(name: string, env?: NodeJS.ProcessEnv): boolean;
export function findMissing(env?: NodeJS.ProcessEnv): Promise<Tool[]>;
export function plan(machine: Machine): Plan;
