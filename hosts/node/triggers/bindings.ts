// Workflow bindings: what connects a trigger source (a webhook, a DingTalk robot, a cron schedule)
// to a published workflow revision. A binding revision is immutable once written; only its state
// moves, by this table:
//
//   state       publish            disable
//   draft       published          disabled
//   published   (already)          disabled
//   disabled    binding.disabled   (already)
//
// The active revision of a binding id is its highest `published` revision: a webhook or DingTalk
// callback to `<bindingId>` and a cron schedule use that one. Secrets are references (names of
// environment variables of the serving process), never stored.
import { isObject, jsonValueProblem } from '../../core/json-input.js';
import { Cron } from 'croner';
import { isPortableId, portableIdSource } from '../../../engine/protocol/ids.js';
import { CodedError } from '../../../engine/protocol/coded-error.js';
import { schemaProblems } from './input-schema.js';
import { parseRevisionRef, type WorkflowCatalog } from '../catalog/catalog.js';
import { triggerLimits } from '../limits.js';
import { deliveryTargetOf, type DeliveryTarget } from '../delivery/target.js';
import type { BindingRow, TriggerStorage } from '../stores/trigger-storage.js';

export type BindingSource = 'webhook' | 'dingtalk' | 'cron';

/** The approver identity and run authority a DingTalk sender entry names. */
export function dingtalkSender(entry: DingtalkConfig['senders'][string]): { approver: string; authority?: string } {
  return typeof entry === 'string' ? { approver: entry } : entry;
}
export type BindingState = 'draft' | 'published' | 'disabled';
export type MisfirePolicy = 'skip' | 'run-once' | 'run-all';

export interface WebhookConfig {
  /** Name of the environment variable that holds the HMAC secret. */
  secretRef: string;
  /** Seconds a signature's timestamp may be away from the clock (default 300). */
  toleranceSeconds?: number;
}

export interface DingtalkConfig {
  /** Name of the environment variable that holds the robot's AppSecret. */
  appSecretRef: string;
  /**
   * Sender ids (`senderStaffId`, else `senderId`) allowed to talk to the robot, each with the
   * approver identity it acts as, and optionally the authority reference of the runs it starts
   * (instead of the binding's `authority`).
   */
  senders: Record<string, string | { approver: string; authority?: string }>;
}

export interface CronConfig {
  /** Croner pattern: 5 fields, or 6 with seconds first. */
  pattern: string;
  /** IANA time zone of the pattern (default UTC). */
  timezone?: string;
  /** What happens to slots that passed while no worker was serving. Every missed slot is recorded either way. */
  misfire?: { policy: MisfirePolicy; /** `run-all`: at most this many missed slots are run (the latest ones). */ bound?: number };
}

/** One field of the run input: a JSON pointer into the event (with an optional default), or a literal. */
export type InputField = { pointer: string; default?: unknown } | { literal: unknown };

/** Where a run's results are delivered: every run of the binding gets it as its `delivery` launch option. */
export type { DeliveryTarget };

/** What a user writes: `binding put <file>` stores it as a new draft revision. */
export interface BindingSpec {
  id: string;
  source: BindingSource;
  config: WebhookConfig | DingtalkConfig | CronConfig;
  /** A published revision: `{ id, revision }` or `"<id>@<revision>"`. */
  target: { id: string; revision: number };
  /** Run input fields; the whole input when absent is `{}`. */
  input?: Record<string, InputField>;
  /** The authority reference runs get: passed to the host's authority resolver as `requested.id`. */
  authority?: string;
  delivery?: DeliveryTarget;
  description?: string;
}

export interface WorkflowBinding extends BindingSpec {
  revision: number;
  state: BindingState;
  createdAt: number;
  createdBy: string;
  publishedAt?: number;
  disabledAt?: number;
}

export class BindingError extends CodedError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'BindingError';
  }
}

export interface BindingProblem {
  pointer: string;
  message: string;
}

const sources = new Set<BindingSource>(['webhook', 'dingtalk', 'cron']);
const policies = new Set<MisfirePolicy>(['skip', 'run-once', 'run-all']);
const envName = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

function checkDelivery(d: unknown, problems: BindingProblem[]): void {
  if (!isObject(d)) return void problems.push({ pointer: '/delivery', message: 'must be an object' });
  const url = d.kind === 'webhook' ? d.url : d.kind === 'dingtalk' ? d.webhookUrl : undefined;
  if (d.kind !== 'webhook' && d.kind !== 'dingtalk') problems.push({ pointer: '/delivery/kind', message: 'must be "webhook" or "dingtalk"' });
  else if (typeof url !== 'string' || !/^https?:\/\//.test(url)) problems.push({ pointer: `/delivery/${d.kind === 'webhook' ? 'url' : 'webhookUrl'}`, message: 'must be an http(s) URL' });
  if (d.secretRef !== undefined && (typeof d.secretRef !== 'string' || !envName.test(d.secretRef))) problems.push({ pointer: '/delivery/secretRef', message: 'must name an environment variable' });
  if (problems.some((p) => p.pointer.startsWith('/delivery'))) return;
  // The rest as the `delivery` launch option checks it, so a published binding never makes a
  // launch that is refused (unknown fields, credentials in the URL, DingTalk `format`).
  try {
    deliveryTargetOf(d);
  } catch (err) {
    problems.push({ pointer: '/delivery', message: (err as Error).message });
  }
}

function checkConfig(source: BindingSource, c: unknown, problems: BindingProblem[]): void {
  if (!isObject(c)) return void problems.push({ pointer: '/config', message: 'must be an object' });
  if (source === 'webhook') {
    if (typeof c.secretRef !== 'string' || !envName.test(c.secretRef)) problems.push({ pointer: '/config/secretRef', message: 'must name the environment variable holding the secret' });
    const t = c.toleranceSeconds;
    if (t !== undefined && (!Number.isInteger(t) || (t as number) < 1 || (t as number) > triggerLimits.webhookToleranceSecondsMax)) problems.push({ pointer: '/config/toleranceSeconds', message: `must be a whole number of seconds in 1..${triggerLimits.webhookToleranceSecondsMax}` });
  } else if (source === 'dingtalk') {
    if (typeof c.appSecretRef !== 'string' || !envName.test(c.appSecretRef)) problems.push({ pointer: '/config/appSecretRef', message: 'must name the environment variable holding the AppSecret' });
    if (!isObject(c.senders) || Object.keys(c.senders).length === 0) problems.push({ pointer: '/config/senders', message: 'must map at least one sender id to an approver identity' });
    else {
      const ref = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= 256;
      for (const [k, v] of Object.entries(c.senders)) {
        const ok = ref(v) || (isObject(v) && ref(v.approver) && (v.authority === undefined || ref(v.authority)) && Object.keys(v).every((key) => key === 'approver' || key === 'authority'));
        if (!ok) problems.push({ pointer: `/config/senders/${k}`, message: 'must be an approver identity, or { "approver": <identity>, "authority": <reference> }' });
      }
    }
  } else {
    if (typeof c.pattern !== 'string' || c.pattern.trim() === '') problems.push({ pointer: '/config/pattern', message: 'must be a cron pattern' });
    else if (c.timezone !== undefined && typeof c.timezone !== 'string') problems.push({ pointer: '/config/timezone', message: 'must be an IANA time zone name' });
    else {
      // Parsed as `serve` will arm it: a pattern or time zone croner refuses is refused here.
      try {
        const job = new Cron(c.pattern, { timezone: (c.timezone as string | undefined) ?? 'UTC', paused: true });
        job.nextRun();
        job.stop();
      } catch (err) {
        problems.push({ pointer: c.timezone !== undefined && /time ?zone|invalid time/i.test((err as Error).message) ? '/config/timezone' : '/config/pattern', message: `croner refuses it: ${(err as Error).message}` });
      }
    }
    const m = c.misfire;
    if (m !== undefined) {
      if (!isObject(m) || !policies.has(m.policy as MisfirePolicy)) problems.push({ pointer: '/config/misfire/policy', message: 'must be skip, run-once or run-all' });
      else if (m.bound !== undefined && (!Number.isInteger(m.bound) || (m.bound as number) < 1 || (m.bound as number) > triggerLimits.cronRunAllBoundMax)) problems.push({ pointer: '/config/misfire/bound', message: `must be a whole number in 1..${triggerLimits.cronRunAllBoundMax}` });
    }
  }
}

/** Checks the shape of a binding (not its target: `publish` checks that). Throws `binding.invalid` with every problem. */
export function parseBindingSpec(value: unknown): BindingSpec {
  const problems: BindingProblem[] = [];
  if (!isObject(value)) throw new BindingError('binding.invalid', 'a binding is a JSON object', { errors: [{ pointer: '', message: 'must be an object' }] });
  // Before any recursive check (schemas, canonical JSON) could run out of stack on it.
  const shape = jsonValueProblem(value, triggerLimits.bodyDepthMax);
  if (shape) throw new BindingError('binding.invalid', `the binding at ${shape.pointer || '/'}: ${shape.problem}`, { errors: [{ pointer: shape.pointer, message: shape.problem }] });
  const known = new Set(['id', 'source', 'config', 'target', 'input', 'authority', 'delivery', 'description']);
  for (const k of Object.keys(value)) if (!known.has(k)) problems.push({ pointer: `/${k}`, message: 'is not a binding field' });
  if (!isPortableId(value.id)) problems.push({ pointer: '/id', message: `must be a portable id (${portableIdSource})` });
  if (!sources.has(value.source as BindingSource)) problems.push({ pointer: '/source', message: 'must be webhook, dingtalk or cron' });
  else checkConfig(value.source as BindingSource, value.config, problems);
  let target: { id: string; revision: number } | undefined;
  if (typeof value.target === 'string') target = parseRevisionRef(value.target);
  else if (isObject(value.target) && isPortableId(value.target.id) && Number.isInteger(value.target.revision) && (value.target.revision as number) >= 1) target = { id: value.target.id as string, revision: value.target.revision as number };
  if (!target) problems.push({ pointer: '/target', message: 'must be a published revision: "<id>@<revision>" or { id, revision }' });
  if (value.input !== undefined) {
    if (!isObject(value.input)) problems.push({ pointer: '/input', message: 'must map input fields to { pointer } or { literal }' });
    else {
      const entries = Object.entries(value.input);
      if (entries.length > triggerLimits.mappingEntriesMax) problems.push({ pointer: '/input', message: `has more than ${triggerLimits.mappingEntriesMax} fields` });
      for (const [k, f] of entries) {
        const p = `/input/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        if (!isObject(f) || ('pointer' in f) === ('literal' in f)) problems.push({ pointer: p, message: 'must be { "pointer": "/…" } (optionally with "default") or { "literal": <value> }' });
        else if ('pointer' in f && (typeof f.pointer !== 'string' || (f.pointer !== '' && !f.pointer.startsWith('/')))) problems.push({ pointer: `${p}/pointer`, message: 'must be a JSON pointer ("" or starting with "/")' });
      }
    }
  }
  if (value.authority !== undefined && (typeof value.authority !== 'string' || value.authority.length === 0 || value.authority.length > 256)) problems.push({ pointer: '/authority', message: 'must be an authority reference (a non-empty string)' });
  if (value.delivery !== undefined) checkDelivery(value.delivery, problems);
  if (value.description !== undefined && typeof value.description !== 'string') problems.push({ pointer: '/description', message: 'must be a string' });
  if (problems.length > 0) throw new BindingError('binding.invalid', `the binding has ${problems.length} problem(s): ${problems.map((p) => `${p.pointer || '/'} ${p.message}`).join('; ')}`, { errors: problems });
  return { ...(value as unknown as BindingSpec), target: target! };
}

// ---------------------------------------------------------------------------------------------
// Input mapping.

/** The value at an RFC 6901 JSON pointer, or `undefined` when there is none. */
export function resolvePointer(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  let cur: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      cur = cur[Number(token)];
    } else if (isObject(cur)) cur = Object.prototype.hasOwnProperty.call(cur, token) ? cur[token] : undefined;
    else return undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}

/** The run input a binding makes of an event; throws `trigger.mapping-failed` naming every field it could not fill. */
export function mapInput(binding: Pick<BindingSpec, 'input' | 'id'>, event: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const missing: string[] = [];
  for (const [key, field] of Object.entries(binding.input ?? {})) {
    if ('literal' in field) out[key] = structuredClone(field.literal);
    else {
      const v = resolvePointer(event, field.pointer);
      if (v !== undefined) out[key] = v;
      else if (field.default !== undefined) out[key] = structuredClone(field.default);
      else missing.push(`${key} (${field.pointer || '""'})`);
    }
  }
  if (missing.length > 0) throw new BindingError('trigger.mapping-failed', `binding ${binding.id}: the event has nothing at ${missing.join(', ')}`, { missing });
  return out;
}

/** Problems of a binding's mapping against the target's input schema, found without an event. */
export function mappingProblems(spec: BindingSpec, inputSchema: unknown): BindingProblem[] {
  const problems: BindingProblem[] = [];
  const schema = isObject(inputSchema) ? inputSchema : {};
  const properties = isObject(schema.properties) ? schema.properties : {};
  const fields = spec.input ?? {};
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]).filter((r): r is string => typeof r === 'string') : [];
  for (const r of required) {
    const field = fields[r];
    if (!field && !(isObject(properties[r]) && 'default' in (properties[r] as object))) problems.push({ pointer: `/input/${r}`, message: `the target requires input ${r}, and the binding does not map it` });
  }
  for (const [key, field] of Object.entries(fields)) {
    if (schema.additionalProperties === false && !(key in properties)) {
      problems.push({ pointer: `/input/${key}`, message: `the target's input schema has no property ${key}` });
      continue;
    }
    const sub = properties[key];
    const value = 'literal' in field ? field.literal : field.default;
    if (sub === undefined || value === undefined) continue;
    for (const p of schemaProblems(sub, value)) problems.push({ pointer: `/input/${key}/${'literal' in field ? 'literal' : 'default'}${p.pointer}`, message: p.message });
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The catalog of bindings.

function bindingOf(row: BindingRow): WorkflowBinding {
  const spec = (typeof row.spec === 'string' ? JSON.parse(row.spec) : Buffer.isBuffer(row.spec) ? JSON.parse(row.spec.toString('utf8')) : row.spec) as BindingSpec;
  return {
    ...spec,
    revision: row.binding_revision,
    state: row.state as BindingState,
    createdAt: row.created_at,
    createdBy: row.created_by,
    ...(row.published_at !== null ? { publishedAt: row.published_at } : {}),
    ...(row.disabled_at !== null ? { disabledAt: row.disabled_at } : {}),
  };
}

export class BindingCatalog {
  constructor(
    private readonly storage: TriggerStorage,
    private readonly workflows: Pick<WorkflowCatalog, 'getRevision'>,
    private readonly now: () => number,
  ) {}

  /**
   * Stores a binding as a new draft revision (1 for a new id). With `expectedRevision`, refuses
   * (`binding.conflict`) unless the id's latest revision is that one (0: the id must be new).
   */
  async put(value: unknown, options: { by?: string; expectedRevision?: number } = {}): Promise<WorkflowBinding> {
    const spec = parseBindingSpec(value);
    const result = await this.storage.putBinding({ id: spec.id, source: spec.source, spec: JSON.stringify(spec), at: this.now(), by: options.by ?? 'sdk', ...(options.expectedRevision !== undefined ? { expectedRevision: options.expectedRevision } : {}) });
    if ('conflict' in result) throw new BindingError('binding.conflict', `binding ${spec.id} is at revision ${result.conflict}, not ${options.expectedRevision}; read it again and retry`);
    return bindingOf(result.row);
  }

  async get(id: string, revision?: number): Promise<WorkflowBinding> {
    const row = revision === undefined ? await this.storage.latestBinding(id) : await this.storage.getBinding(id, revision);
    if (!row) throw new BindingError('binding.not-found', revision === undefined ? `there is no binding ${id}` : `there is no binding ${id}@${revision}`);
    return bindingOf(row);
  }

  async list(filter: { source?: BindingSource; state?: BindingState; id?: string } = {}): Promise<WorkflowBinding[]> {
    return (await this.storage.listBindings(filter)).map(bindingOf);
  }

  /** The revision events of `id` go to: its highest published revision. `binding.not-found` when none is. */
  async active(id: string): Promise<WorkflowBinding> {
    const row = await this.storage.activeBinding(id);
    if (!row) throw new BindingError('binding.not-found', `binding ${id} has no published revision (unknown or disabled)`);
    return bindingOf(row);
  }

  /** Bindings of a source that are active now (one revision per id). */
  async activeOf(source: BindingSource): Promise<WorkflowBinding[]> {
    const all = await this.list({ source, state: 'published' });
    const best = new Map<string, WorkflowBinding>();
    for (const b of all) if ((best.get(b.id)?.revision ?? 0) < b.revision) best.set(b.id, b);
    return [...best.values()];
  }

  /**
   * Publishes a draft revision after checking it against its target: the revision must be
   * published in the catalog, and the input mapping must fit the target's input schema
   * (every required input mapped, no unknown input, literals and defaults valid).
   */
  async publish(id: string, revision: number, options: { by?: string } = {}): Promise<WorkflowBinding> {
    const binding = await this.get(id, revision);
    if (binding.state === 'published') return binding;
    if (binding.state === 'disabled') throw new BindingError('binding.disabled', `binding ${id}@${revision} is disabled; put a new revision instead`);
    let inputSchema: unknown;
    try {
      inputSchema = (await this.workflows.getRevision(binding.target.id, binding.target.revision)).template?.spec?.inputSchema ?? {};
    } catch (err) {
      throw new BindingError('binding.target-not-found', `binding ${id}@${revision} targets ${binding.target.id}@${binding.target.revision}, which is not published: ${(err as Error).message}`);
    }
    const problems = mappingProblems(binding, inputSchema);
    if (problems.length > 0) throw new BindingError('binding.invalid', `binding ${id}@${revision} does not fit ${binding.target.id}@${binding.target.revision}: ${problems.map((p) => `${p.pointer} ${p.message}`).join('; ')}`, { errors: problems });
    const moved = await this.storage.setBindingState(id, revision, 'published', this.now(), options.by ?? 'sdk');
    if (!moved) throw new BindingError('binding.conflict', `binding ${id}@${revision} changed state while it was being published`);
    return this.get(id, revision);
  }

  /** Disables one revision, or (without `revision`) every revision of the binding: events to it are refused from then on. */
  async disable(id: string, revision?: number, options: { by?: string } = {}): Promise<WorkflowBinding[]> {
    const targets = revision === undefined ? await this.list({ id }) : [await this.get(id, revision)];
    if (targets.length === 0) throw new BindingError('binding.not-found', `there is no binding ${id}`);
    for (const b of targets) if (b.state !== 'disabled') await this.storage.setBindingState(id, b.revision, 'disabled', this.now(), options.by ?? 'sdk');
    return Promise.all(targets.map((b) => this.get(id, b.revision)));
  }
}
