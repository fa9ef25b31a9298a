// The one trigger pipeline every source goes through:
//
//   adapter: verify (signature, timestamp window) -> identify the caller
//   pipeline: dedupe -> map -> validate -> create the run
//
// An adapter (webhook.ts, dingtalk.ts, cron-bindings.ts) does the first two and calls `reject`
// when either refuses; `admit` does the rest. Every outcome is an ingress record (see
// trigger-storage.ts); the `launched` record and the queued run are committed in one
// transaction, so no crash leaves an accepted event without its run or a run without its record.
// The run id is a function of the dedupe key: a second delivery of one event can only find the
// first run, never make another.
import { CodedError } from '../../../engine/protocol/coded-error.js';
import { keyedRunId } from '../../core/ids.js';
import { sha256Hex } from '../../shared/digest.js';
import { schemaProblems } from './input-schema.js';
import { mapInput, type BindingSource, type WorkflowBinding } from './bindings.js';
import { triggerLimits } from '../limits.js';
import type { TriggerHost } from './trigger-host.js';
import type { DedupeKey, IngressEntry, IngressRecord } from '../stores/trigger-storage.js';

/** An event an adapter verified and identified. */
export interface TriggerEvent {
  source: BindingSource;
  /** The source's own id of the event (a header, a DingTalk msgId, a cron slot id). */
  sourceEventId: string;
  caller?: string;
  /** When the event says it happened (ms). */
  occurredAt?: number;
  /** What the binding's input pointers resolve against. */
  payload: unknown;
}

export interface Admission {
  /** The run the event created, or the first run of its dedupe key on a duplicate (undefined for a missed cron slot). */
  runId: string | undefined;
  deduplicated: boolean;
  record?: IngressRecord;
}

/** An event refused by a step of the pipeline; it is recorded `rejected` with this code and message. */
export class TriggerRejected extends CodedError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'TriggerRejected';
  }
}

export interface PipelineOptions {
  /** The deployment this process serves: part of the dedupe key (default `default`). */
  deployment?: string;
  log?: (level: string, message: string) => void;
}

/** The run id of an admitted event: `i-` and 32 hex digits of the SHA-256 of its dedupe key. */
export function ingressRunId(key: DedupeKey): string {
  return keyedRunId('i', JSON.stringify([key.deployment, key.source, key.sourceEventId, key.bindingId, key.bindingRevision]), sha256Hex);
}

export class TriggerPipeline {
  readonly deployment: string;

  constructor(
    private readonly rt: TriggerHost,
    private readonly options: PipelineOptions = {},
  ) {
    this.deployment = options.deployment ?? 'default';
  }

  private now(): number {
    return this.rt.kernel.now();
  }

  /** Records an event refused before it reached `admit` (bad signature, unknown binding, unknown sender…). */
  async reject(source: BindingSource, bindingId: string, reason: { code: string; message: string }, event: Partial<TriggerEvent> & { bindingRevision?: number } = {}): Promise<IngressRecord> {
    const entry: IngressEntry = {
      deployment: this.deployment,
      source,
      // As the request named it: an unknown id may be anything, so it is cut to a bound.
      bindingId: bindingId.slice(0, triggerLimits.bindingIdCharsMax),
      ...(event.bindingRevision !== undefined ? { bindingRevision: event.bindingRevision } : {}),
      ...(event.sourceEventId !== undefined ? { sourceEventId: event.sourceEventId.slice(0, triggerLimits.sourceEventIdCharsMax) } : {}),
      status: 'rejected' as const,
      reasonCode: reason.code,
      reason: reason.message.slice(0, 2000),
      ...(event.caller !== undefined ? { caller: event.caller } : {}),
      ...(event.occurredAt !== undefined ? { occurredAt: event.occurredAt } : {}),
      receivedAt: this.now(),
    };
    // No verified caller: anyone may send it, so such records are kept to a bound.
    const storage = this.rt.triggerStorage;
    if (event.caller === undefined && source !== 'cron') return storage.recordUnverified(entry, triggerLimits.unverifiedRejectionsKeptMax);
    return storage.record(entry);
  }

  /** Logs what an unauthenticated caller must not be told (the server's configuration). */
  warn(message: string): void {
    this.options.log?.('warn', message);
  }

  /** Records an accepted event that starts no run (a DingTalk `status` or `approve`). */
  async received(binding: WorkflowBinding, event: Omit<TriggerEvent, 'payload'>, runId?: string): Promise<IngressRecord> {
    return this.rt.triggerStorage.record({ ...this.entryOf(binding, event), status: 'received', ...(runId !== undefined ? { runId } : {}) });
  }

  private entryOf(binding: WorkflowBinding, event: Omit<TriggerEvent, 'payload'>): Omit<IngressEntry, 'status'> & { sourceEventId: string; bindingRevision: number } {
    return {
      deployment: this.deployment,
      source: event.source,
      bindingId: binding.id,
      bindingRevision: binding.revision,
      sourceEventId: event.sourceEventId,
      ...(event.caller !== undefined ? { caller: event.caller } : {}),
      ...(event.occurredAt !== undefined ? { occurredAt: event.occurredAt } : {}),
      receivedAt: this.now(),
    };
  }

  /**
   * Dedupe -> map -> validate -> create the run, for an event of an active binding. Throws
   * `TriggerRejected` (`trigger.mapping-failed`, `trigger.input-invalid`, `trigger.target-unavailable`)
   * after recording the rejection. `recordDuplicate: false` writes nothing for a duplicate (cron:
   * every worker fires every slot).
   */
  async admit(binding: WorkflowBinding, event: TriggerEvent, options: {
      recordDuplicate?: boolean;
      /** Kept as the `launched` record's reason (a cron slot run late by its misfire policy). */
      note?: { code: string; message: string };
      /** The authority reference of this run instead of the binding's (a DingTalk sender's own). */
      authority?: string;
    } = {}): Promise<Admission> {
    if (event.sourceEventId.length === 0 || event.sourceEventId.length > triggerLimits.sourceEventIdCharsMax) {
      throw await this.refuse(binding, event, 'trigger.bad-event-id', `the source event id must have 1..${triggerLimits.sourceEventIdCharsMax} characters`);
    }
    const storage = this.rt.triggerStorage;
    const entry = this.entryOf(binding, event);
    const key: DedupeKey = { deployment: this.deployment, source: event.source, sourceEventId: event.sourceEventId, bindingId: binding.id, bindingRevision: binding.revision };
    // Dedupe first: a duplicate costs one read and one write, no mapping and no compile.
    const first = await storage.findAdmitted(key);
    if (first) {
      const record = options.recordDuplicate === false ? undefined : await storage.record({ ...entry, status: 'deduplicated', ...(first.runId !== undefined ? { runId: first.runId } : {}) });
      return { runId: first.runId, deduplicated: true, ...(record ? { record } : {}) };
    }
    let input: Record<string, unknown>;
    try {
      input = mapInput(binding, event.payload);
    } catch (err) {
      const e = err as CodedError;
      throw await this.refuse(binding, event, e.code ?? 'trigger.mapping-failed', e.message, e.detail);
    }
    let plan;
    try {
      plan = await this.rt.catalog.plan(binding.target.id, binding.target.revision);
    } catch (err) {
      throw await this.refuse(binding, event, 'trigger.target-unavailable', `binding ${binding.id}@${binding.revision} targets ${binding.target.id}@${binding.target.revision}: ${(err as Error).message}`);
    }
    const root = plan.templates[plan.root]?.template as { spec?: { inputSchema?: unknown } } | undefined;
    const problems = schemaProblems(root?.spec?.inputSchema ?? {}, input);
    if (problems.length > 0) {
      throw await this.refuse(binding, event, 'trigger.input-invalid', `the mapped input does not match ${binding.target.id}@${binding.target.revision}'s input schema: ${problems.map((p) => `${p.pointer || '/'} ${p.message}`).join('; ')}`, { errors: problems });
    }
    const runId = ingressRunId(key);
    const authorityRef = options.authority ?? binding.authority;
    const origin = { kind: 'trigger', source: event.source, binding: `${binding.id}@${binding.revision}`, sourceEventId: event.sourceEventId, ...(event.caller !== undefined ? { caller: event.caller } : {}) };
    const prepared = await this.rt.prepareLaunch(
      { type: 'plan', plan, templateKey: plan.root },
      {
        runId,
        input,
        executionMode: 'background',
        actor: 'trigger',
        origin,
        ...(authorityRef !== undefined ? { authority: { id: authorityRef, scopes: [] } } : {}),
        // The binding's delivery target: the run's approvals and its end are delivered there.
        ...(binding.delivery !== undefined ? { delivery: binding.delivery } : {}),
      },
    );
    const admitted = await storage.admit({ ...entry, status: 'launched', runId, ...(options.note !== undefined ? { reasonCode: options.note.code, reason: options.note.message } : {}) }, prepared.queued!, this.now(), options.recordDuplicate === false ? { recordDuplicate: false } : {});
    if (!admitted.deduplicated) this.rt.wakeWorkers();
    return { runId: admitted.runId, deduplicated: admitted.deduplicated, ...(admitted.record ? { record: admitted.record } : {}) };
  }

  /** A cron slot that is not run (misfire policy): recorded `missed` once, whoever sees it first. */
  async missed(binding: WorkflowBinding, slot: { sourceEventId: string; occurredAt: number }, reason: string): Promise<boolean> {
    const { created } = await this.rt.triggerStorage.recordMissed({
      ...this.entryOf(binding, { source: 'cron', sourceEventId: slot.sourceEventId, occurredAt: slot.occurredAt }),
      status: 'missed',
      reasonCode: 'trigger.misfire',
      reason,
    });
    return created;
  }

  private async refuse(binding: WorkflowBinding, event: TriggerEvent, code: string, message: string, detail?: unknown): Promise<TriggerRejected> {
    await this.reject(event.source, binding.id, { code, message }, { ...event, bindingRevision: binding.revision });
    return new TriggerRejected(code, message, detail);
  }
}
