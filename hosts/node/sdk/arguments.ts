// Arguments of the runtime's operator and read calls, checked before they reach a store or an
// inbox: a run id that is not text, a command whose `by` is an object, a filter whose `limit` is
// a list used to fail as an SQL binding error or a TypeError deep inside. Each is refused here with
// a typed error that names the argument (`store.bad-id`, `sdk.bad-argument`).
import { isObject, jsonInputLimits, jsonValueProblem } from '../../core/json-input.js';
import type { OperatorCommand } from '../../core/ownership-store.js';
import type { RunListFilter } from '../../core/store.js';
import { WorkflowError } from './errors.js';

const bad = (argument: string, message: string): never => {
  throw new WorkflowError('sdk.bad-argument', `${argument} ${message}`, { argument });
};

const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v);

/** A run id given to a call: text (whether such a run exists is the call's to say). */
export function assertRunIdArgument(runId: unknown): asserts runId is string {
  if (typeof runId !== 'string') throw new WorkflowError('store.bad-id', `a run id must be text, not ${kind(runId)}`, { argument: 'runId' });
}

/** The id `post` returned for a command: a whole number of 1 or more. */
export function assertCommandIdArgument(commandId: unknown): void {
  if (!(Number.isSafeInteger(commandId) && (commandId as number) >= 1)) bad('commandId', `must be the whole number post returned, not ${typeof commandId === 'number' ? commandId : kind(commandId)}`);
}

function optionalText(o: Record<string, unknown>, key: string, at: string): void {
  if (o[key] !== undefined && typeof o[key] !== 'string') bad(`${at}.${key}`, `must be text, not ${kind(o[key])}`);
}

function optionalInteger(o: Record<string, unknown>, key: string, at: string, min: number): void {
  const v = o[key];
  if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= min)) bad(`${at}.${key}`, `must be an integer of ${min} or more, not ${typeof v === 'number' ? v : kind(v)}`);
}

const commandTypes = new Set(['approve', 'resolve', 'cancel', 'resume', 'late-outcome']);

/** An operator command as `post` commits it: its type, who gives it, and members of their types, all plain JSON. */
export function assertCommandArgument(command: unknown): asserts command is OperatorCommand {
  if (!isObject(command)) bad('command', `must be an object, not ${kind(command)}`);
  const c = command as Record<string, unknown>;
  if (typeof c.type !== 'string' || !commandTypes.has(c.type)) bad('command.type', `must be one of ${[...commandTypes].join(', ')}, not ${typeof c.type === 'string' ? JSON.stringify(c.type) : kind(c.type)}`);
  if (typeof c.by !== 'string' || c.by === '') bad('command.by', `must name who gives the command (non-empty text), not ${kind(c.by)}`);
  for (const key of ['nodeId', 'invocationId', 'comment', 'reason']) optionalText(c, key, 'command');
  if (c.approved !== undefined && typeof c.approved !== 'boolean') bad('command.approved', `must be true or false, not ${kind(c.approved)}`);
  optionalInteger(c, 'item', 'command', 0);
  optionalInteger(c, 'attentionSeq', 'command', 1);
  const found = jsonValueProblem(command, jsonInputLimits.runInputDepthMax);
  if (found) bad(`command${found.pointer.replace(/\//g, '.')}`, `must be plain JSON: ${found.problem}`);
}

/** The options of `approve`: an object whose `approved`, when given, is true or false (not read as either). */
export function assertApproveOptions(options: unknown): void {
  if (!isObject(options)) bad('options', `must be { by, comment?, approved?, timeoutMs? }, not ${kind(options)}`);
  const approved = (options as Record<string, unknown>).approved;
  if (approved !== undefined && typeof approved !== 'boolean') bad('options.approved', `must be true or false, not ${kind(approved)}`);
}

/** A resolution of an unknown outcome: an object with `by` and at most one of `succeeded`, `retry`, `fail`. */
export function assertResolutionArgument(resolution: unknown): void {
  if (!isObject(resolution)) bad('resolution', `must be an object ({ by, succeeded | retry | fail }), not ${kind(resolution)}`);
  const r = resolution as Record<string, unknown>;
  if (r.retry !== undefined && typeof r.retry !== 'boolean') bad('resolution.retry', `must be true or false, not ${kind(r.retry)}`);
  optionalText(r, 'fail', 'resolution');
}

const filterKeys = new Set(['statuses', 'limit', 'before', 'createdFrom', 'createdTo', 'runIdPrefix', 'template', 'origin', 'pausedReason', 'search']);

/** A filter of `listRuns`: an object of the members `RunListFilter` names, each of its type. */
export function assertRunListFilter(filter: unknown): asserts filter is RunListFilter | undefined {
  if (filter === undefined) return;
  if (!isObject(filter)) bad('filter', `must be an object, not ${kind(filter)}`);
  const f = filter as Record<string, unknown>;
  const unknown = Object.keys(f).filter((k) => !filterKeys.has(k) && f[k] !== undefined);
  if (unknown.length > 0) bad('filter', `has no member ${unknown.join(', ')} (it has ${[...filterKeys].join(', ')})`);
  if (f.statuses !== undefined && !(Array.isArray(f.statuses) && f.statuses.every((s) => typeof s === 'string'))) bad('filter.statuses', `must be a list of statuses, not ${kind(f.statuses)}`);
  optionalInteger(f, 'limit', 'filter', 1);
  optionalInteger(f, 'createdFrom', 'filter', 0);
  optionalInteger(f, 'createdTo', 'filter', 0);
  for (const key of ['runIdPrefix', 'template', 'search', 'pausedReason']) optionalText(f, key, 'filter');
  if (f.before !== undefined && !(isObject(f.before) && Number.isSafeInteger(f.before.createdAt) && typeof f.before.runId === 'string')) bad('filter.before', 'must be { createdAt: integer, runId: text }');
  if (f.origin !== undefined && f.origin !== 'trigger' && f.origin !== 'direct' && !(isObject(f.origin) && typeof f.origin.bindingId === 'string' && (f.origin.bindingRevision === undefined || Number.isSafeInteger(f.origin.bindingRevision)))) {
    bad('filter.origin', 'must be "trigger", "direct" or { bindingId, bindingRevision? }');
  }
}

/** The page options of `readEvents`: `afterSeq` an integer of 0 or more, `limit` of 1 or more. */
export function assertPageOptions(options: unknown): void {
  if (options === undefined) return;
  if (!isObject(options)) bad('options', `must be an object, not ${kind(options)}`);
  optionalInteger(options as Record<string, unknown>, 'afterSeq', 'options', 0);
  optionalInteger(options as Record<string, unknown>, 'limit', 'options', 1);
}
