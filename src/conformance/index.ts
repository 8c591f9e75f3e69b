// `lifeline-chat/conformance`: the protocol conformance suite, for Node.
export { runConformance, selectChecks } from './run.js';
export type { ConformanceReport } from './run.js';
export type { ConformanceOptions } from './context.js';
export type { CheckResult, CheckStatus, SectionId } from './check.js';
export { formatResult, formatSummary, formatJson } from './report.js';
export { scriptContent } from './script.js';
export type { ScriptContent, ScriptStep } from './script.js';
