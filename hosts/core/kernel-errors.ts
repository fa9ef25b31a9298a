// The kernel's typed error: a stable code, a message, and detail for the caller.
export class KernelError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = 'KernelError';
  }
}
