// The kernel's typed error: a stable code, a message, and detail for the caller.
import { CodedError } from '../../engine/protocol/coded-error.js';

export class KernelError extends CodedError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'KernelError';
  }
}
