'use client';
import type { StorageStatus } from '../types.js';
import { useLifeline } from './context.js';
import { useStore } from './store.js';

/** The client's storage health (`opening`, `ok`, `degraded`, `memory`), for a status line. */
export function useStorageStatus(): StorageStatus {
  return useStore(useLifeline().storageStatus);
}
