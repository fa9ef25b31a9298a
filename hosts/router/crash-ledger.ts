/**
 * Runs that kill the router. A run whose activation takes the whole process down (a script that
 * drives it out of its memory cgroup, a bug of the engine) would otherwise be activated again by
 * every restart's recovery and kill every one of them. The ledger remembers which run was being
 * activated when a process died, and parks a run that killed `parkAfterCrashes` processes in a
 * row: it is no longer activated until an operator cancels or unparks it.
 *
 *   <dir>/activation.mark   the run being activated now: written before each activation, blanked
 *                           when it returns. A plain positioned write, no fsync: it has to
 *                           outlive the process (a SIGKILL or an OOM kill keeps the page cache),
 *                           not the machine, and it costs two small writes per activation.
 *   <dir>/crashes.json      per run: processes that died activating it in a row, since when, and
 *                           whether it is parked. Rewritten durably (temp + fsync + rename) only
 *                           when that changes: after a crash, when a run with a count activates
 *                           without dying (the count is reset), on unpark and when a run ends.
 *
 * Call order: `CrashLedger.open(dir)` (after the state directory's LOCK is held; it reads the mark
 * the previous process left, counts it and blanks it) -> `activating(runId)` /
 * `activating(undefined)` around every activation -> `unpark` / `forget` -> `close`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { assertPortableId, StoreError } from '../core/store.js';
import { writeFileDurable } from './record-file.js';

export const activationMarkFileName = 'activation.mark';
export const crashLedgerFileName = 'crashes.json';
/** Processes a run may kill in a row before it is parked. */
export const parkAfterCrashes = 2;
/** Bytes of the mark: a portable id (at most 36 characters) and a newline, padded with spaces. */
const markBytes = 64;

export interface CrashRecord {
  /** Processes that died activating the run since it last activated without dying. */
  crashes: number;
  /** Milliseconds since the epoch: the first and the last of those deaths, as seen by the next start. */
  firstAt: number;
  lastAt: number;
  /** Set once `crashes` reached `parkAfterCrashes`. */
  parkedAt?: number;
}

export class CrashLedger {
  private readonly records: Map<string, CrashRecord>;
  private current: string | undefined;
  private readonly blank = Buffer.alloc(markBytes, 0x20);

  private constructor(
    private readonly dir: string,
    private readonly fd: number,
    records: Map<string, CrashRecord>,
    /** What `open` found: the run the previous process died activating, with its record. */
    readonly found: { runId: string; record: CrashRecord } | undefined,
    private readonly clock: () => number,
  ) {
    this.records = records;
  }

  static open(dir: string, clock: () => number = Date.now): CrashLedger {
    const ledgerFile = path.join(dir, crashLedgerFileName);
    const records = new Map<string, CrashRecord>();
    if (fs.existsSync(ledgerFile)) {
      let parsed: { runs?: Record<string, CrashRecord> };
      try {
        parsed = JSON.parse(fs.readFileSync(ledgerFile, 'utf8')) as { runs?: Record<string, CrashRecord> };
        for (const [runId, record] of Object.entries(parsed.runs ?? {})) {
          assertPortableId(runId, 'run id');
          if (!Number.isInteger(record?.crashes) || record.crashes < 1) throw new Error(`run ${runId}: bad crash count`);
          records.set(runId, record);
        }
      } catch (error) {
        // Losing it would let a run that kills the router be activated again: fail closed.
        throw new StoreError('store.corrupt', `${ledgerFile} is damaged (${(error as Error).message}); it counts the processes runs killed: remove it only to forget those counts`);
      }
    }
    const markFile = path.join(dir, activationMarkFileName);
    const fd = fs.openSync(markFile, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    let found: { runId: string; record: CrashRecord } | undefined;
    try {
      const bytes = Buffer.alloc(markBytes);
      const n = fs.readSync(fd, bytes, 0, markBytes, 0);
      const runId = bytes.subarray(0, n).toString('utf8').split('\n')[0]!.trim();
      if (runId !== '') {
        try {
          assertPortableId(runId, 'run id');
        } catch {
          throw new StoreError('store.corrupt', `${markFile} is damaged (it does not name a run id); remove it to go on`);
        }
        const now = clock();
        const before = records.get(runId);
        const record: CrashRecord = { crashes: (before?.crashes ?? 0) + 1, firstAt: before?.firstAt ?? now, lastAt: now, ...(before?.parkedAt ? { parkedAt: before.parkedAt } : {}) };
        if (record.crashes >= parkAfterCrashes) record.parkedAt ??= now;
        records.set(runId, record);
        found = { runId, record };
      }
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
    const ledger = new CrashLedger(dir, fd, records, found, clock);
    if (found) {
      ledger.save();
      ledger.writeMark(undefined);
    }
    return ledger;
  }

  /** The run being activated now (`undefined`: the activation returned, the process lived). */
  activating(runId: string | undefined): void {
    if (runId === undefined) {
      const survived = this.current;
      this.current = undefined;
      this.writeMark(undefined);
      // It activated without killing the process: its count of deaths in a row starts again.
      const record = survived === undefined ? undefined : this.records.get(survived);
      if (survived !== undefined && record && record.parkedAt === undefined) {
        this.records.delete(survived);
        this.save();
      }
      return;
    }
    this.current = runId;
    this.writeMark(runId);
  }

  /** The record of a parked run, `undefined` when it is not parked. */
  parked(runId: string): CrashRecord | undefined {
    const record = this.records.get(runId);
    return record?.parkedAt !== undefined ? record : undefined;
  }

  /** Every parked run. */
  parkedRuns(): Map<string, CrashRecord> {
    return new Map([...this.records].filter(([, r]) => r.parkedAt !== undefined));
  }

  /** Every run with a count, parked or not. */
  runIds(): string[] {
    return [...this.records.keys()];
  }

  /** The operator lets a parked run be activated again; its count starts from zero. */
  unpark(runId: string): void {
    if (this.records.delete(runId)) this.save();
  }

  /** Drops the records of runs that ended (cancelled, failed, completed). */
  forget(runIds: Iterable<string>): void {
    let changed = false;
    for (const runId of runIds) changed = this.records.delete(runId) || changed;
    if (changed) this.save();
  }

  close(): void {
    fs.closeSync(this.fd);
  }

  private writeMark(runId: string | undefined): void {
    const bytes = runId === undefined ? this.blank : Buffer.concat([Buffer.from(`${runId}\n`), this.blank]).subarray(0, markBytes);
    fs.writeSync(this.fd, bytes, 0, markBytes, 0);
  }

  private save(): void {
    const runs = Object.fromEntries(this.records);
    writeFileDurable(path.join(this.dir, crashLedgerFileName), Buffer.from(`${JSON.stringify({ version: 1, runs }, null, 1)}\n`));
  }
}
