// The error the Node host's SDK throws: a stable `code`, a message, and detail when there is any.
import { asHostError, HostError } from '../../core/host-runtime.js';

export class WorkflowError extends HostError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'WorkflowError';
  }
}

/** Any error as a `WorkflowError`, keeping a coded error's code. */
export function asError(err: unknown): WorkflowError {
  return asHostError(err, WorkflowError);
}
