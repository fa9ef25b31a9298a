/**
 * The router host's gateway. `execute` only queues a request; the cadence loop moves it on:
 *
 *   execute -> pending --admission--> admitted --dispatch--> running --exit--> outcome
 *                 \______________ cancellation convergence _______________/
 *
 * Local tools (fixed commands of the host module) run through the LocalToolLauncher: durable
 * `claimed` receipt -> spawn without a shell -> durable `started` receipt -> durable
 * `completed` receipt -> outcome. Admission consults the receipts first, so an invocation id
 * never starts a second process: a completed receipt settles the request without running
 * anything, a started attempt without a completion is reported `tool.outcome-unknown`.
 * In-process tools and agents (JavaScript functions of the host module) are the shared gateway
 * registry (hosts/core/gateway-registry.ts), as in the Node host: credential references resolved
 * at call time, secrets scrubbed from outcomes. They have no receipts; after a restart the engine
 * decides about them (`afterRestart`). A local tool is a fixed command that receives no
 * credential, so a node that names one is refused instead of run without it.
 *
 * A cancelled request never starts an attempt: its signal is checked at admission and again at
 * the moment of dispatch (after the engine's commit, before the claim and spawn), and while a
 * cancellation of a run is on its way to the journal, dispatch holds that run's requests back.
 */
import { outcomeOfThrown, type Gateway, type GatewayContext } from '../core/gateway.js';
import { credentialRefsOf, credentialUnresolved, RegisteredCapabilities, type AgentDefinition, type ApprovalHandler, type CredentialResolver, type ModelDefinition, type SkillResolver, type ToolContext, type ToolDefinition } from '../core/gateway-registry.js';
import type { CapabilityOutcome, GatewayRequest, HostLog } from '../core/types.js';
import type { LocalToolLauncher, LocalToolTable } from './local-tools.js';
import type { CompletionReceipt, ReceiptLog } from './receipt-log.js';
import { stoppedAtShutdown } from './attempt-recovery.js';

export type InProcessToolContext = ToolContext;
export type InProcessTool = ToolDefinition;
export type InProcessAgent = AgentDefinition;
export type { ApprovalHandler, CredentialResolver };

export interface RouterGatewayOptions {
  launcher: LocalToolLauncher;
  receipts: ReceiptLog;
  localTools: LocalToolTable;
  tools?: Record<string, InProcessTool | InProcessTool['execute']>;
  agents?: Record<string, InProcessAgent | InProcessAgent['run']>;
  /** The models behind agent loops' `model` references; their turns run in process. */
  models?: Record<string, ModelDefinition>;
  skills?: SkillResolver;
  /** Decides approvals in process; without it (or when it returns undefined) a person decides later. */
  approvals?: ApprovalHandler;
  /** Resolves the credential and connection references of in-process tools and agents. */
  credentials?: CredentialResolver;
  attemptsInFlightMax: number;
  log: HostLog;
  /** The last committed seq of a run, recorded in each claim (a journal that reopens behind it lost records). */
  journalSeqOf?: (runId: string) => number | undefined;
}

interface Job {
  request: GatewayRequest;
  context: GatewayContext;
  state: 'pending' | 'admitted' | 'running' | 'done';
  resolve(outcome: CapabilityOutcome | undefined): void;
}

const cancelled = (message: string): CapabilityOutcome => ({ ok: false, error: { code: 'capability.cancelled', message, retryable: false } });
const reasonOf = (job: Job): string => String((job.context.signal.reason as Error | undefined)?.message ?? 'cancelled');

/**
 * The outcome a completion receipt stands for. After a cancellation the engine no longer waits
 * for it, so it is recorded as evidence (`capability.late`) with what really happened: the
 * output of a tool that still finished its work, or how its process ended.
 */
export function outcomeOfCompletion(c: CompletionReceipt): CapabilityOutcome {
  // A tool that still finished its work while the host was shutting down or after its
  // invocation was cancelled has a real result.
  if (c.exitCode === 0 && c.output !== undefined && (c.stopIntent === undefined || c.stopIntent === 'shutdown' || c.stopIntent === 'cancel')) return { ok: true, output: c.output };
  const tail = c.stderrTail ? `; stderr: ${c.stderrTail.slice(-500)}` : '';
  const ended = c.signal ? `signal ${c.signal}` : `exit code ${c.exitCode}`;
  switch (c.stopIntent) {
    case 'cancel':
      // Not `capability.cancelled` (which says nothing ran): the process ran and was stopped.
      return { ok: false, error: { code: 'tool.stopped', message: `the invocation was cancelled and its process stopped (${ended})${c.outputError ? `; ${c.outputError}` : ''}${tail}`, retryable: false } };
    case 'timeout':
      return { ok: false, error: { code: 'tool.timeout', message: `the tool exceeded its timeoutMs${tail}`, retryable: true } };
    case 'shutdown':
      // Not an outcome of the step: the run stays running and recovery decides (stoppedAtShutdown).
      return { ok: false, error: { code: 'tool.stopped', message: `the host stopped the tool while shutting down${tail}`, retryable: false } };
    default:
      return { ok: false, error: { code: 'tool.failed', message: `${c.outputError ?? 'the tool failed'}${tail}` } };
  }
}

export class RouterGateway implements Gateway {
  private readonly pending: Job[] = [];
  private readonly admitted: Job[] = [];
  private readonly running = new Map<string, Job>();
  private readonly cancels: Job[] = [];
  private readonly inProcessRunning = new Set<Promise<unknown>>();
  /** Invocations settled by a completion receipt, with their run: candidates for retirement. */
  readonly settled = new Map<string, string>();
  private frozen = false;
  /** Runs with a cancellation on its way to the journal (count of them): nothing of theirs starts. */
  private readonly cancelling = new Map<string, number>();
  private readonly registered: RegisteredCapabilities;

  constructor(private readonly options: RouterGatewayOptions) {
    this.registered = new RegisteredCapabilities({ tools: options.tools, agents: options.agents, approvals: options.approvals, credentials: options.credentials, models: options.models, skills: options.skills });
    for (const name of Object.keys(options.localTools)) {
      if (this.registered.has('tool', name)) throw new Error(`tool ${JSON.stringify(name)} is declared both as a local tool and in process`);
    }
  }

  effects(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, spec] of Object.entries(this.options.localTools)) out[`tool:${name}`] = spec.idempotent ? 'idempotent' : 'unknown';
    return { ...out, ...this.registered.effects() };
  }

  execute(request: GatewayRequest, context: GatewayContext): Promise<CapabilityOutcome | undefined> {
    // A frozen gateway starts nothing: the invocation stays in flight in the journal and the
    // next start recovers it (a local tool without a claim never ran, so it runs then).
    if (this.frozen) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const job: Job = { request, context, state: 'pending', resolve };
      job.resolve = (outcome) => {
        if (job.state === 'done') return;
        job.state = 'done';
        resolve(outcome);
      };
      this.pending.push(job);
      if (context.signal.aborted) this.cancels.push(job);
      else context.signal.addEventListener('abort', () => this.cancels.push(job), { once: true });
    });
  }

  /** Work not yet finished: queued, admitted or running. */
  get busy(): number {
    return this.pending.length + this.admitted.length + this.running.size + this.cancels.length;
  }

  /** Whether any request of `runId` is queued, admitted or running here. */
  hasWorkFor(runId: string): boolean {
    const of = (j: Job) => j.request.runId === runId;
    return this.pending.some(of) || this.admitted.some(of) || [...this.running.values()].some(of);
  }

  /** Cancellation convergence: settles or stops at most `limit` cancelled invocations. */
  converge(limit: number): number {
    let n = 0;
    while (n < limit && this.cancels.length > 0) {
      const job = this.cancels.shift()!;
      n++;
      const reason = reasonOf(job);
      if (job.state === 'pending' || job.state === 'admitted') {
        remove(job.state === 'pending' ? this.pending : this.admitted, job);
        job.resolve(cancelled(reason));
      } else if (job.state === 'running') {
        // A local process gets an exact stop; its completion receipt (stopIntent cancel)
        // settles the job. An in-process call cannot be stopped: its result is ignored.
        if (!this.options.launcher.stop(job.request.invocationId, 'cancel')) {
          this.running.delete(job.request.invocationId);
          job.resolve(cancelled(reason));
        }
      }
    }
    return n;
  }

  /** Admission: decides about at most `limit` queued requests, within the in-flight cap. */
  admit(limit: number): number {
    let n = 0;
    while (n < limit && this.pending.length > 0 && this.admitted.length + this.running.size < this.options.attemptsInFlightMax) {
      const job = this.pending.shift()!;
      n++;
      if (job.context.signal.aborted) {
        job.resolve(cancelled(reasonOf(job)));
        continue;
      }
      const early = this.decide(job.request);
      if (early) {
        job.resolve(early.outcome);
        continue;
      }
      job.state = 'admitted';
      this.admitted.push(job);
    }
    return n;
  }

  /**
   * Settles a request without running anything (`outcome` undefined: no outcome from this
   * host, e.g. an approval left to a person), or returns undefined to let it run.
   */
  private decide(request: GatewayRequest): { outcome: CapabilityOutcome | undefined } | undefined {
    const settle = (outcome: CapabilityOutcome | undefined) => ({ outcome });
    if (request.kind === 'tool' && Object.hasOwn(this.options.localTools, request.name)) {
      if (Object.keys(credentialRefsOf(request)).length > 0) return settle(credentialUnresolved(request, `${request.name} is a local tool of the router, which receives no credential`));
      const receipts = this.options.receipts.get(request.invocationId);
      if (!receipts) return undefined;
      if (receipts.completion && stoppedAtShutdown(receipts.completion)) {
        if (!receipts.claim.idempotent) {
          return settle({ ok: false, error: { code: 'tool.outcome-unknown', message: `invocation ${request.invocationId} was stopped unfinished when the host shut down; it is not run twice`, retryable: false } });
        }
        // Idempotent: running it again has the effect of running it once.
        this.options.receipts.retire([request.invocationId]);
        return undefined;
      }
      if (receipts.completion) {
        this.settled.set(request.invocationId, request.runId);
        return settle(outcomeOfCompletion(receipts.completion));
      }
      if (receipts.start) {
        return settle({ ok: false, error: { code: 'tool.outcome-unknown', message: `invocation ${request.invocationId} was started before (pid ${receipts.start.pid}) and ended without a receipt; it is not run twice`, retryable: false } });
      }
      // Claimed, never started: no process ever existed, the claim can go and the attempt run.
      this.options.receipts.retire([request.invocationId]);
      return undefined;
    }
    if ((request.kind === 'tool' || request.kind === 'agent' || request.kind === 'model') && this.registered.has(request.kind, request.name)) return undefined;
    if (request.kind === 'approval') return this.registered.has('approval', request.name) ? undefined : settle(undefined);
    if (request.kind === 'tool' || request.kind === 'agent' || request.kind === 'model') {
      return settle({ ok: false, error: { code: `${request.kind}.not-registered`, message: `no ${request.kind} named ${JSON.stringify(request.name)} is declared in this router's host module`, retryable: false } });
    }
    return settle({ ok: false, error: { code: 'gateway.unknown-kind', message: `the router host cannot carry out ${request.kind} requests`, retryable: false } });
  }

  /**
   * Holds back the requests of `runId` while its cancellation is committed; call the returned
   * function once it is (the signals of the invocations it cancelled are then aborted).
   */
  holdForCancel(runId: string): () => void {
    this.cancelling.set(runId, (this.cancelling.get(runId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.cancelling.get(runId)! - 1;
      if (left > 0) this.cancelling.set(runId, left);
      else this.cancelling.delete(runId);
    };
  }

  /** Dispatch: starts at most `limit` admitted attempts; a cancelled one is settled instead. */
  dispatch(limit: number): number {
    let n = 0;
    const held: Job[] = [];
    while (n < limit && this.admitted.length > 0 && !this.frozen) {
      const job = this.admitted.shift()!;
      // The moment of dispatch: nothing after this check can let a cancellation in before the claim.
      if (job.context.signal.aborted) {
        n++;
        job.resolve(cancelled(reasonOf(job)));
        continue;
      }
      if (this.cancelling.has(job.request.runId)) {
        held.push(job);
        continue;
      }
      n++;
      job.state = 'running';
      this.running.set(job.request.invocationId, job);
      const finish = (outcome: CapabilityOutcome | undefined) => {
        this.running.delete(job.request.invocationId);
        job.resolve(outcome);
      };
      const { request, context } = job;
      if (request.kind === 'tool' && Object.hasOwn(this.options.localTools, request.name)) {
        try {
          const journalSeq = this.options.journalSeqOf?.(request.runId);
          const attempt = this.options.launcher.start(request.invocationId, request.name, request.input, journalSeq === undefined ? undefined : { runId: request.runId, journalSeq });
          attempt.result.then(
            (completion) => {
              if (stoppedAtShutdown(completion)) {
                // Stopped at the end of the grace: no outcome here, the invocation stays in
                // flight and the next start resolves it from the receipts.
                this.running.delete(request.invocationId);
                job.resolve(undefined);
                return;
              }
              this.settled.set(request.invocationId, request.runId);
              finish(outcomeOfCompletion(completion));
            },
            (err) => {
              // The completion receipt could not be written: the outcome is not durable, so it
              // is not reported; the next start finds a started attempt without a receipt.
              this.options.log('error', `invocation ${request.invocationId}: ${(err as Error).message}`);
              this.running.delete(request.invocationId);
              job.resolve(undefined);
            },
          );
        } catch (err) {
          finish(outcomeOfThrown(err, 'tool.error'));
        }
        continue;
      }
      // In process: the shared registry resolves credentials, races cancellation and never throws.
      const tracked = this.registered.execute(request, context).then(finish, (err) => finish(outcomeOfThrown(err, `${request.kind}.error`)));
      this.inProcessRunning.add(tracked);
      void tracked.finally(() => this.inProcessRunning.delete(tracked));
    }
    this.admitted.unshift(...held);
    return n;
  }

  /** Stop, step 1: nothing queued starts any more; queued requests get no outcome here. */
  freeze(): void {
    this.frozen = true;
    for (const job of [...this.pending, ...this.admitted]) job.resolve(undefined);
    this.pending.length = 0;
    this.admitted.length = 0;
  }

  /**
   * Stop, step 2: every local process and in-process call gets `graceMs` to finish, and its
   * outcome is reported as usual; a process still running then gets an exact stop (intent
   * `shutdown`) and no outcome: its run stays running and the next start resolves it.
   */
  async drain(graceMs: number): Promise<void> {
    const inProcess = async () => {
      if (this.inProcessRunning.size === 0) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.allSettled([...this.inProcessRunning]), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
    };
    await Promise.all([this.options.launcher.shutdown().catch((err) => this.options.log('error', `stopping local tools: ${(err as Error).message}`)), inProcess()]);
    for (const job of this.running.values()) job.resolve(undefined);
    this.running.clear();
  }
}

function remove<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}
