// The error the Node host's SDK throws: a stable `code`, a message, and detail when there is any.
export class WorkflowError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = 'WorkflowError';
  }
}
