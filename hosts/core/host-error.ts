// The error every host runtime throws, and how anything thrown below a host becomes it. Apart
// from host-runtime.ts so that the kernel's own modules (trace-context.ts) can throw it without
// importing the host helpers, which import the kernel.
import { CodedError } from '../../engine/protocol/coded-error.js';

/** The error every host runtime throws: a stable `code`, a message, and detail when there is any. */
export class HostError extends CodedError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'HostError';
  }
}

/** A host's own error class (`WorkflowError`, `RouterError`): the same shape under its own name. */
export type HostErrorClass<E extends HostError> = new (code: string, message: string, detail?: unknown) => E;

/** Anything thrown below a host runtime (store, kernel, engine, checks) as that host's error. */
export function asHostError<E extends HostError>(err: unknown, ErrorClass: HostErrorClass<E>): E {
  if (err instanceof ErrorClass) return err;
  const e = err as { code?: string; message?: string; detail?: unknown };
  return new ErrorClass(e.code ?? 'host.error', e.message ?? String(err), e.detail);
}

/** Runs `work`, turning what it throws into the host's error. */
export function mapErrors<T, E extends HostError>(ErrorClass: HostErrorClass<E>, work: () => T): T {
  try {
    return work();
  } catch (err) {
    throw asHostError(err, ErrorClass);
  }
}
