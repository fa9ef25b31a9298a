// The CLI's exit codes, and the one table that maps an error's stable code to one of them.
// README.md ("The CLI") and the usage text list the same codes.

export const exitCodes = {
  ok: 0,
  runFailed: 1,
  usage: 2,
  invalid: 3,
  paused: 4,
  cancelled: 5,
  notFound: 6,
  replayDiverged: 7,
  conflict: 8,
  storeUnusable: 9,
  permissionDenied: 10,
  storageFull: 11,
  queued: 12,
  internal: 70,
} as const;

/** One line per code, for the usage text. */
export const exitCodeLines: readonly string[] = [
  '0   ok',
  '1   the run failed (or another error of the run)',
  '2   usage: unknown command or option, missing argument, a numeric option out of its range',
  '3   invalid template or input (also bad JSON, input nested too deep, an integer beyond 2^53-1)',
  '4   the run is paused, waiting for a person',
  '5   the run was cancelled',
  '6   not found (run, file, revision)',
  '7   replay diverged',
  '8   conflict: someone else changed it first (compare-and-set, run ownership)',
  '9   the store is unusable: corrupt (a damaged page, a value that fails its checksum, doctor found damage), not a store, a newer schema, or this clock too far from its own',
  '10  permission denied: on the state directory or its database, or an approver the node does not allow',
  '11  storage full',
  '12  the run is queued and has not started: it waits for a worker (`agent-workflow serve`)',
  '70  internal error',
];

/** Conflict and ownership codes: another writer got there first. */
const conflictCodes = new Set(['store.conflict', 'catalog.draft-conflict', 'binding.conflict', 'binding.disabled', 'run.exists', 'engine.run-exists', 'command.pending', 'run.owned-elsewhere', 'run.fenced', 'delivery.not-retryable', 'resolve.stale', 'resolve.unknown-unnamed']);

/**
 * The exit code for an error with stable code `code` (and, for wrapped I/O failures, the
 * underlying message, which is all a `store.io` from a commit keeps of SQLite's reason).
 */
export function exitCodeForError(code: string, message = ''): number {
  if (code.endsWith('not-found')) return exitCodes.notFound;
  // `serve --http` without the token it needs: a wrong command line, not a failed run.
  if (code === 'http.no-token' || code === 'http.insecure-non-loopback' || code === 'http.bad-token-file') return exitCodes.usage;
  // A malformed --deliver-to or --delivery-* value: a wrong command line too.
  if (code === 'launch.bad-delivery' || code === 'launch.delivery-target-refused' || code === 'delivery.bad-option') return exitCodes.usage;
  // A bad AGENT_WORKFLOW_WASM_TIER or SQLite cache size: a wrong configuration, not a broken store.
  if (code === 'host.bad-option' || code === 'store.bad-option') return exitCodes.usage;
  // A host module that still declares the cron `triggers` serve no longer fires (docs/triggers.md, "Migrating host module triggers").
  if (code === 'host.triggers-removed') return exitCodes.usage;
  // Artifact keys or retention missing or malformed: a wrong configuration (docs/durability.md).
  if (code === 'artifact.bad-key' || code === 'artifact.no-keys' || code === 'gc.no-retention' || code === 'doctor.unsupported-store') return exitCodes.usage;
  // A sealed artifact this host cannot open (its key is not here, or the bytes are damaged).
  if (code === 'artifact.key-missing' || code === 'artifact.open-failed' || code === 'artifact.sealed-invalid') return exitCodes.storeUnusable;
  if (code.startsWith('template.') || code.startsWith('run.input') || code === 'cli.bad-json' || code === 'workflow.dependency-missing' || code === 'binding.invalid') return exitCodes.invalid;
  if (conflictCodes.has(code) || code.endsWith('.lease-held') || code.endsWith('.not-owner')) return exitCodes.conflict;
  // `lease.clock-skew`: this machine's clock is too far from a shared store's to take leases on it.
  if (code === 'store.corrupt' || code === 'store.not-a-store' || code === 'store.schema-too-new' || code === 'lease.clock-skew') return exitCodes.storeUnusable;
  if (code === 'store.permission-denied' || code === 'approval.not-allowed') return exitCodes.permissionDenied;
  if (code === 'store.full') return exitCodes.storageFull;
  // Raw SQLite and file-system errors that reached the top unwrapped.
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') return exitCodes.storageFull;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS' || code === 'SQLITE_PERM' || code.startsWith('SQLITE_READONLY')) return exitCodes.permissionDenied;
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) return exitCodes.storeUnusable;
  if (code === 'store.io') {
    if (/SQLITE_FULL|ENOSPC|disk is full|no space left/i.test(message)) return exitCodes.storageFull;
    if (/SQLITE_READONLY|SQLITE_PERM|EACCES|EPERM|readonly database|permission denied/i.test(message)) return exitCodes.permissionDenied;
    if (/SQLITE_CORRUPT|SQLITE_NOTADB|malformed|not a database/i.test(message)) return exitCodes.storeUnusable;
  }
  if (code === 'cli.internal' || code === 'engine.internal' || code === 'engine.trap' || code === 'engine.reviving' || code === 'engine.request-not-json') return exitCodes.internal;
  return exitCodes.runFailed;
}
