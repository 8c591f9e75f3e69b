/**
 * The client's diagnostics channel: `client.diagnostics` subscribers and the app's
 * `onDiagnostic` hear every diagnostic; a listener that throws is reported and stops
 * neither the others nor the code that emitted.
 */
import { createEmitter, reportListenerError } from '../core/subscribable.js';
import type { Diagnostic, Subscribable } from '../types.js';

export interface DiagnosticsHub extends Subscribable<Diagnostic> {
  emit(diagnostic: Diagnostic): void;
}

export function createDiagnosticsHub(onDiagnostic: ((diagnostic: Diagnostic) => void) | undefined): DiagnosticsHub {
  const listeners = createEmitter<Diagnostic>();
  return {
    subscribe: listeners.subscribe,
    emit(diagnostic) {
      listeners.emit(diagnostic);
      try {
        onDiagnostic?.(diagnostic);
      } catch (error) {
        reportListenerError(error);
      }
    },
  };
}
