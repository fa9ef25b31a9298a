import type { Json } from './json.js';

/** An error of the engine with a stable code; crosses the boundary as `engine-error`. */
export class EngineError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly detail?: Json,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}
