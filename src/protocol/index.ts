export * from './schemas.js';
export * from './decode.js';
export { sha256Hex } from './integrity.js';
export * from './server-schemas.js';
