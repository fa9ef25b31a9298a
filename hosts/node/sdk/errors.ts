// The error the Node host's SDK throws: a stable `code`, a message, and detail when there is any.
import { HostError } from '../../core/host-runtime.js';

export class WorkflowError extends HostError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'WorkflowError';
  }
}
