import type { Json } from './json.js';
import { CodedError } from './protocol/coded-error.js';

/** An error of the engine with a stable code; crosses the boundary as `engine-error`. */
export class EngineError extends CodedError {
  declare readonly detail?: Json;

  constructor(code: string, message: string, detail?: Json) {
    super(code, message, detail);
    this.name = 'EngineError';
  }
}
