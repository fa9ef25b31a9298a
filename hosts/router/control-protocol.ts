/**
 * The router's control socket protocol: a unix socket in the state directory (`control.sock`,
 * mode 0600, so only the router's user can talk to it), one JSON request per line, answered by
 * one or more JSON frames per line. Every frame carries the request's `id`; the last frame of an
 * answer has `end: true`. Requests on one connection are answered in order.
 *
 *   request                                                      | frames
 *   -------------------------------------------------------------+-------------------------------------------
 *   submit  {template, input?, count?, dependencies?}            | RunAccepted {index, runId} per run, as each
 *                                                                |   `run.accepted` is durable; then SubmitDone
 *                                                                |   {accepted}, or Error {error, accepted}
 *   list    {statuses?, limit?}                                  | Result {runs}
 *   get     {runId}                                              | Result {run}
 *   trace   {runId, afterSeq?}                                   | Events {events} per page, then TraceDone {lastSeq}
 *   cancel  {runId, reason?}                                     | Result {activation}
 *   approve {runId, nodeId, by, approved?, comment?}             | Result {activation}
 *   resolve {runId, nodeId, by, succeeded? | retry? | fail?, item?}| Result {activation}
 *   unpark  {runId}                                              | Result {unparked: {runId, status}}
 *   export  {runId}                                              | Result {export} (the Node/browser export format)
 *   stats   {}                                                   | Result {stats}
 *
 * Any request may be answered with Error {error: {code, message}}: a typed error of the router
 * (`run.not-found`, `template.invalid`, `approval.not-pending`, …) or of this protocol
 * (`control.bad-request`, `control.request-too-large`).
 */
export const controlSocketName = 'control.sock';

/** Longest request line (a template with its input); longer lines are refused and the connection closed. */
export const controlRequestBytesMax = 4 * 1024 * 1024;
/** Most runs one `submit` request may ask for. */
export const submitCountMax = 1000;
/** Events per `Events` frame of a trace. */
export const traceFrameEventsMax = 500;
/** How long a stopping router lets a control connection finish the answer it is writing. */
export const controlCloseGraceMs = 1000;
/** Longest unix socket path (sun_path is 108 bytes with its terminating NUL). */
export const socketPathBytesMax = 107;

export type ControlOp = 'submit' | 'list' | 'get' | 'trace' | 'cancel' | 'approve' | 'resolve' | 'unpark' | 'export' | 'stats';

export const controlOps: readonly ControlOp[] = ['submit', 'list', 'get', 'trace', 'cancel', 'approve', 'resolve', 'unpark', 'export', 'stats'];

export interface ControlRequest {
  id?: string | number;
  op: ControlOp;
  [field: string]: unknown;
}

export interface ControlErrorBody {
  code: string;
  message: string;
}

export interface ControlFrame {
  id?: string | number;
  kind: 'RunAccepted' | 'SubmitDone' | 'Result' | 'Events' | 'TraceDone' | 'Error';
  end?: true;
  error?: ControlErrorBody;
  [field: string]: unknown;
}
