/**
 * The host runtime every host with a store shares: what `launch`, `getRun`, `approve`, `resolve`,
 * `cancel`, `exportRun` and `replay` decide, written once. The Node SDK (`WorkflowRuntime`) and
 * the router (`RouterHost`) differ only in what they do around it: which store (SQLite or
 * PostgreSQL with leases and an inbox, or the file journal), which timers (the kernel's own, or
 * the router's cadence), and which process model (workers, or one cadence loop).
 *
 * Stores answer synchronously (the router's file journal, SQLite) or with a promise
 * (PostgreSQL), so the shared steps take what the host read and return what it must do; nothing
 * here performs I/O, reads a clock or draws randomness (those are passed in), and nothing here
 * uses a Node-only API.
 *
 * Call order of a launch: `launchTargetOf` -> the host compiles or looks up the plan ->
 * `launchIdentity` (run id, workflow id, authority) -> the host's kernel launches (or queues).
 * Of an operator action: the host reads the run's record and tail -> `approvalTarget` /
 * `resolutionFields` -> the host's kernel applies it (directly, or through the inbox).
 */
import type { EngineInstance } from './engine-instance.js';
import { newRunId } from './ids.js';
import { assertTemplateJson } from './json-input.js';
import type { RunOutcome } from './kernel.js';
import { pendingApproval } from './operator.js';
import { assertPortableId, type EventPage, type JournalStore, type RunRecord, type RunTail, type SyncJournalStore } from './store.js';
import { exportFormat, type RunExport } from './export-format.js';
import { terminalStatuses, type Authority, type ExecutionPlan, type HostNodeDefinition, type RunProjection, type ValidationReport } from './types.js';
import { HostError } from './host-error.js';
import { narrowAuthority } from '../../engine/protocol/authority.js';

export { asHostError, HostError, mapErrors, type HostErrorClass } from './host-error.js';

export function runNotFound(runId: string): HostError {
  return new HostError('run.not-found', `run ${runId} does not exist in this store`);
}

// ---- authority ------------------------------------------------------------------------------

/**
 * What an authority resolver is asked: the run, what its launch asked for (an SDK caller's
 * `authority`, a trigger binding's reference as `{ id, scopes: [] }`, a child run's parent
 * authority), and whether a stored run is being resumed rather than launched.
 */
export interface AuthorityContext {
  runId: string;
  workflowId: string;
  requested?: Authority;
  resuming?: boolean;
}

/**
 * Who may do what in a run; consulted at launch and again on every resume. `undefined` at a
 * resume keeps the run's authority as it is; at a launch it refuses the launch
 * (`authority.unresolved`).
 */
export type AuthorityResolver = (context: AuthorityContext) => Authority | undefined;

/** Everything, for a local deployment that names no authorities. */
export const allowEverything: Authority = { id: 'local', scopes: ['*'] };

/**
 * A host's `authorities` option as a resolver. A function is the deployment's policy and is
 * used as it is. A fixed authority (or none: everything) is a grant: a launch that asks for
 * an authority gets what it asked for within the grant (`narrowAuthority`, never more), one
 * that asks for nothing gets the grant, and a resume keeps the run's authority of launch, so a
 * run launched narrower is never widened later.
 */
export function authorityResolver(option: AuthorityResolver | Authority | undefined): AuthorityResolver {
  if (typeof option === 'function') return option;
  const grant = option ?? allowEverything;
  return ({ requested, resuming }) => (resuming ? undefined : requested ? narrowAuthority(grant, requested) : grant);
}

/** The authority a launch runs under, or a typed refusal when the resolver names none. */
export function launchAuthority(resolve: AuthorityResolver, context: Omit<AuthorityContext, 'resuming'>): Authority {
  const authority = resolve(context);
  if (!authority) throw new HostError('authority.unresolved', `no authority resolves for run ${context.runId}${context.requested ? ` (asked for ${context.requested.id})` : ''}`);
  return authority;
}

// ---- templates ------------------------------------------------------------------------------

/**
 * Validates a template (a JSON value, or its text) once it has passed the input guard, with the
 * host's node definitions when it has any (the engine's request `{template, nodeDefinitions}`).
 */
export function validateTemplate(engine: Pick<EngineInstance, 'validate'>, template: unknown, nodeDefinitions: readonly HostNodeDefinition[] = []): ValidationReport {
  assertTemplateJson(template);
  const text = typeof template === 'string' ? template : JSON.stringify(template);
  if (nodeDefinitions.length === 0) return engine.validate(text);
  let value: unknown;
  try {
    value = typeof template === 'string' ? JSON.parse(template) : template;
  } catch {
    // The engine reports what is wrong with the text.
    return engine.validate(text);
  }
  return engine.validate(JSON.stringify({ template: value, nodeDefinitions }));
}

// ---- launch ---------------------------------------------------------------------------------

/** What a run is launched from: a template (compiled now), a pinned plan, or a published revision. */
export type LaunchTarget =
  | { type: 'inline'; template: unknown; dependencies?: { template: unknown; revision: number }[] }
  | { type: 'plan'; plan: ExecutionPlan; templateKey?: string }
  | { type: 'published'; id: string; revision: number };

/** A launch target as given: a typed target of a kind this host serves, or else a bare template. */
export function launchTargetOf<K extends LaunchTarget['type']>(target: unknown, kinds: readonly K[]): Extract<LaunchTarget, { type: K }> | { type: 'inline'; template: unknown } {
  const kind = (target as { type?: unknown } | null)?.type;
  return (kinds as readonly unknown[]).includes(kind) ? (target as Extract<LaunchTarget, { type: K }>) : { type: 'inline', template: target };
}

/** The template of a plan a run starts at: the caller's for a plan target, else the plan's root. */
export function templateKeyOf(target: LaunchTarget, plan: ExecutionPlan): string {
  return target.type === 'plan' ? (target.templateKey ?? plan.root) : plan.root;
}

/** The workflow id of a plan's template (the root's by default). */
export function workflowIdOf(plan: ExecutionPlan, templateKey = plan.root): string {
  return plan.templates[templateKey].template.metadata.id as string;
}

/**
 * Who a new run is: its id (given, or drawn from the host's clock and random bytes), checked
 * portable, and the authority it acts under. Hosts check the input (`assertRunInput`) first,
 * before they compile anything.
 */
export function launchIdentity(args: {
  plan: ExecutionPlan;
  templateKey: string;
  runId?: string;
  requested?: Authority;
  resolveAuthority: AuthorityResolver;
  now: number;
  randomBytes: (n: number) => Uint8Array;
}): { runId: string; workflowId: string; authority: Authority } {
  const runId = args.runId ?? newRunId(args.now, args.randomBytes);
  assertPortableId(runId, 'run id');
  const workflowId = workflowIdOf(args.plan, args.templateKey);
  const authority = launchAuthority(args.resolveAuthority, { runId, workflowId, ...(args.requested ? { requested: args.requested } : {}) });
  return { runId, workflowId, authority };
}

// ---- reading a run --------------------------------------------------------------------------

/** What `getRun` answers: the outcome and the record's projections. */
export type RunView = RunOutcome & { lastSeq: number; createdAt: number; updatedAt: number; owner?: string; waitReason?: string };

export function runView(record: RunRecord, outcome: RunOutcome): RunView {
  return {
    ...outcome,
    lastSeq: record.lastSeq,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    ...(record.lease?.owner ? { owner: record.lease.owner } : {}),
    ...(record.waitReason ? { waitReason: record.waitReason } : {}),
  };
}

/** The pinned plan a run's tail carries. */
export function planOfTail(tail: RunTail): ExecutionPlan {
  return JSON.parse(new TextDecoder().decode(tail.plan)) as ExecutionPlan;
}

/** Events read per page when a whole journal is read (export, replay). */
export const eventPageSize = 5_000;

/** Every event of a run, ascending by seq, from a synchronous store. */
export function readAllEvents(store: Pick<SyncJournalStore, 'readEvents'>, runId: string): any[] {
  return readAllEventTexts(store, runId).map((e) => JSON.parse(e));
}

/** Every event of a run, ascending by seq, from any store. */
export async function readAllEventsAsync(store: Pick<JournalStore, 'readEvents'>, runId: string): Promise<any[]> {
  return (await readAllEventTextsAsync(store, runId)).map((e) => JSON.parse(e));
}

/** Every event of a run as the journal keeps it (its JSON text), ascending by seq, from a synchronous store. */
export function readAllEventTexts(store: Pick<SyncJournalStore, 'readEvents'>, runId: string): string[] {
  const texts: string[] = [];
  for (let after = 0, more = true; more; ) ({ after, more } = appendPage(texts, store.readEvents(runId, after, eventPageSize)));
  return texts;
}

/** Every event of a run as the journal keeps it (its JSON text), ascending by seq, from any store. */
export async function readAllEventTextsAsync(store: Pick<JournalStore, 'readEvents'>, runId: string): Promise<string[]> {
  const texts: string[] = [];
  for (let after = 0, more = true; more; ) ({ after, more } = appendPage(texts, await store.readEvents(runId, after, eventPageSize)));
  return texts;
}

function appendPage(texts: string[], page: EventPage): { after: number; more: boolean } {
  for (const e of page.events) texts.push(e);
  return { after: page.lastSeq, more: page.more };
}

// ---- export and replay ----------------------------------------------------------------------

/** A stored artifact as the store answers it. */
/** An artifact as a store hands it out: plain bytes, and the envelope as kept when it is sealed. */
export type StoredArtifact = { bytes: Uint8Array; mediaType?: string; sealed?: Uint8Array } | undefined;

/** The digests of the captured (not redacted) artifacts a run's events refer to, each once. */
export function artifactDigests(events: readonly any[]): string[] {
  const digests = new Set<string>();
  for (const e of events) {
    const ref = e.payload?.artifact as { digest: string; redacted?: boolean } | undefined;
    if (ref && !ref.redacted) digests.add(ref.digest);
  }
  return [...digests];
}

/** A self-contained export of a run from what the host read: record, plan, events and the artifacts it found. */
export function runExportOf(record: RunRecord, plan: ExecutionPlan, events: any[], artifacts: ReadonlyMap<string, StoredArtifact>): RunExport {
  const out: RunExport['artifacts'] = {};
  // A sealed artifact leaves sealed: an export carries no payload the store keeps encrypted.
  for (const [digest, stored] of artifacts) if (stored) out[digest] = { mediaType: stored.mediaType ?? 'application/json', base64: base64Of(stored.sealed ?? stored.bytes), ...(stored.sealed ? { sealed: true as const } : {}) };
  return { format: exportFormat, run: { runId: record.runId, status: record.status, lastSeq: record.lastSeq }, plan, events, artifacts: out };
}

/** The export of a run of a synchronous store (the router's file journal), with its artifacts. */
export function exportFromSyncStore(store: SyncJournalStore, runId: string): RunExport {
  const record = store.getRun(runId);
  const tail = store.load(runId);
  if (!record || !tail) throw runNotFound(runId);
  const events = readAllEvents(store, runId);
  const artifacts = new Map(artifactDigests(events).map((d) => [d, store.getArtifact?.(d)] as const));
  return runExportOf(record, planOfTail(tail), events, artifacts);
}

/** The export of a run of any store, with its artifacts. */
export async function exportFromStore(store: JournalStore, runId: string): Promise<RunExport> {
  const record = await store.getRun(runId);
  const tail = await store.load(runId);
  if (!record || !tail) throw runNotFound(runId);
  const events = await readAllEventsAsync(store, runId);
  const artifacts = new Map<string, StoredArtifact>();
  for (const d of artifactDigests(events)) artifacts.set(d, await store.getArtifact?.(d));
  return runExportOf(record, planOfTail(tail), events, artifacts);
}

/** Replay modes a stored run can be replayed in without calling anything. */
export type ReplayMode = 'inspect' | 'recorded';

/**
 * A stored run as a replay reads it: its plan, its events as the journal keeps them (texts, handed
 * to the engine as they are; parsing and writing them again cost the host about a fifth of a
 * replay), and the captured artifacts they name, as text.
 */
export interface ReplaySource {
  plan: ExecutionPlan;
  eventTexts: string[];
  artifacts: Record<string, string>;
}

/** The captured artifacts events name, from their texts: only a text that may name one is parsed. */
function namedArtifacts(eventTexts: readonly string[]): string[] {
  return artifactDigests(eventTexts.filter((t) => t.includes('"artifact":{')).map((t) => JSON.parse(t)));
}

const utf8 = new TextDecoder();
/** Adds an artifact's text when the store has it (a missing one is reported by the replay that needs it). */
function addArtifact(artifacts: Record<string, string>, digest: string, stored: StoredArtifact): void {
  if (stored) artifacts[digest] = utf8.decode(stored.bytes);
}

export async function replaySourceFromStore(store: JournalStore, runId: string): Promise<ReplaySource> {
  const tail = await store.load(runId);
  if (!tail) throw runNotFound(runId);
  const eventTexts = await readAllEventTextsAsync(store, runId);
  const artifacts: Record<string, string> = {};
  for (const d of namedArtifacts(eventTexts)) addArtifact(artifacts, d, await store.getArtifact?.(d));
  return { plan: planOfTail(tail), eventTexts, artifacts };
}

export function replaySourceFromSyncStore(store: SyncJournalStore, runId: string): ReplaySource {
  const tail = store.load(runId);
  if (!tail) throw runNotFound(runId);
  const eventTexts = readAllEventTexts(store, runId);
  const artifacts: Record<string, string> = {};
  for (const d of namedArtifacts(eventTexts)) addArtifact(artifacts, d, store.getArtifact?.(d));
  return { plan: planOfTail(tail), eventTexts, artifacts };
}

/** The engine's replay request for a stored run read as texts. */
export function replayRequestOf(source: ReplaySource, mode: ReplayMode, editedPlan?: ExecutionPlan) {
  return { mode, plan: source.plan, ...(editedPlan ? { editedPlan } : {}), eventTexts: source.eventTexts, artifacts: source.artifacts };
}

/** The dependencies a run pinned (every template but the root, with its revision), to compile an edited root against. */
export function pinnedDependencies(plan: ExecutionPlan): { template: unknown; revision: number }[] {
  return Object.entries(plan.templates)
    .filter(([key, t]) => key !== plan.root && t.revision !== undefined)
    .map(([, t]) => ({ template: t.template, revision: t.revision! }));
}

function base64Of(bytes: Uint8Array): string {
  let binary = '';
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  return btoa(binary);
}

// ---- operator actions -----------------------------------------------------------------------

/**
 * The invocation an approval decides, by the run's projection: the run must not be terminal, the
 * node must be waiting for an approval, and `by` must be one of its `approvers` when it names any.
 */
export function approvalTarget(record: RunRecord | undefined, projection: RunProjection, runId: string, nodeId: string, by: string): string {
  if (!record) throw runNotFound(runId);
  if (terminalStatuses.has(record.status)) throw new HostError('run.terminal', `run ${runId} is ${record.status}; there is nothing to approve`);
  return pendingApproval(projection, runId, nodeId, by).invocationId;
}

/** Nothing to cancel: the run already ended. */
export function isTerminal(record: RunRecord): boolean {
  return terminalStatuses.has(record.status);
}
