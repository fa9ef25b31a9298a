/**
 * The one shape of every error the engine and the hosts raise: a stable `code` that callers branch
 * on, a message for people, and `detail` when there is any. Each part keeps a subclass for its
 * own name (`EngineError`, `StoreError`, `WorkflowError`, ...); `instanceof CodedError` finds them
 * all, and the CLI, the MCP server and the HTTP API print any of them the same way.
 */
export class CodedError extends Error {
  /** Absent, not `undefined`, when there is none (a subclass may answer it with a getter). */
  declare readonly detail?: unknown;

  constructor(
    readonly code: string,
    message: string,
    detail?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
    if (detail !== undefined) Object.defineProperty(this, 'detail', { value: detail, enumerable: true });
  }
}
