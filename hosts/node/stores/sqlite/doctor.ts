// `agent-workflow doctor`: what is wrong with a SQLite store file, read without changing it. SQLite's
// `integrity_check` for the file's structure, then every value that carries a checksum (schema
// v12: journal rows, checkpoints, plans) against it, and every plain artifact against its digest.
// What it cannot tell: a value stored before v12 (no checksum: counted as unchecked), a sealed
// artifact's content (opened only with its key), and a row removed whole.
import BetterSqlite3 from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { checksum } from './checksum.js';
import { StoreError } from '../../../core/store.js';
import { isSealed } from '../../../core/sealed-artifact.js';
import { sha256Digest } from '../../../shared/digest.js';
import { sqliteLimits } from '../../limits.js';

export interface ValueCheck {
  /** Values checked against their checksum (or digest). */
  checked: number;
  /** Values without one (stored before schema v12; sealed artifacts). */
  unchecked: number;
  /** Values that do not match, each named (at most `doctorProblemsMax`). */
  damaged: string[];
  damagedCount: number;
}

export interface DoctorReport {
  store: string;
  schemaVersion: number;
  healthy: boolean;
  /** `PRAGMA integrity_check`: `ok`, or the problems it found (at most `doctorProblemsMax`). */
  integrity: string[];
  journalRows: ValueCheck;
  checkpoints: ValueCheck;
  plans: ValueCheck;
  artifacts: ValueCheck;
}

const fresh = (): ValueCheck => ({ checked: 0, unchecked: 0, damaged: [], damagedCount: 0 });

function tally(check: ValueCheck, bytes: Uint8Array | null, crc: number | null, name: () => string): void {
  if (bytes === null) return;
  if (crc === null) return void check.unchecked++;
  check.checked++;
  if (checksum(bytes) === crc) return;
  check.damagedCount++;
  if (check.damaged.length < sqliteLimits.doctorProblemsMax) check.damaged.push(name());
}

function columns(db: BetterSqlite3.Database, table: string): Set<string> {
  return new Set((db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as { name: string }[]).map((c) => c.name));
}

/** Examines the store file `file` (read-only; a missing file is `store.not-found`). */
export function examineSqliteStore(file: string): DoctorReport {
  if (!existsSync(file)) throw new StoreError('store.not-found', `there is no store at ${file}`);
  let db: BetterSqlite3.Database;
  try {
    db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new StoreError('store.not-a-store', `${file} cannot be opened as a SQLite database: ${(err as Error).message}`);
  }
  const report: DoctorReport = { store: file, schemaVersion: 0, healthy: false, integrity: [], journalRows: fresh(), checkpoints: fresh(), plans: fresh(), artifacts: fresh() };
  try {
    try {
      report.schemaVersion = db.pragma('user_version', { simple: true }) as number;
      report.integrity = (db.pragma(`integrity_check(${sqliteLimits.doctorProblemsMax})`) as { integrity_check: string }[]).map((r) => r.integrity_check);
    } catch (err) {
      // A file so damaged that SQLite cannot read its header or schema.
      report.integrity = [`${(err as { code?: string }).code ?? 'error'}: ${(err as Error).message}`];
      return report;
    }
    const read = <T>(sql: string): IterableIterator<T> => db.prepare(sql).iterate() as IterableIterator<T>;
    try {
      const events = columns(db, 'events');
      if (events.size > 0) {
        const crc = events.has('crc') ? 'crc' : 'NULL AS crc';
        const first = events.has('first_seq') ? 'first_seq' : 'NULL AS first_seq';
        for (const r of read<{ run_id: string; first_seq: number | null; seq: number; body: Buffer; crc: number | null }>(`SELECT run_id, ${first}, seq, body, ${crc} FROM events`)) {
          tally(report.journalRows, r.body, r.crc, () => `run ${r.run_id}: journal row seq ${r.first_seq ?? r.seq}..${r.seq}`);
        }
      }
      if (columns(db, 'checkpoints').size > 0) {
        const crc = columns(db, 'checkpoints').has('crc') ? 'crc' : 'NULL AS crc';
        for (const r of read<{ run_id: string; seq: number; body: Buffer; crc: number | null }>(`SELECT run_id, seq, body, ${crc} FROM checkpoints`)) tally(report.checkpoints, r.body, r.crc, () => `run ${r.run_id}: checkpoint at seq ${r.seq}`);
      }
      const runs = columns(db, 'runs');
      if (runs.size > 0) {
        const planCrc = runs.has('plan_crc') ? 'plan_crc' : 'NULL AS plan_crc';
        const cpCrc = runs.has('checkpoint_crc') ? 'checkpoint_crc' : 'NULL AS checkpoint_crc';
        for (const r of read<{ run_id: string; plan: Buffer; plan_crc: number | null; checkpoint: Buffer | null; checkpoint_crc: number | null }>(`SELECT run_id, plan, ${planCrc}, checkpoint, ${cpCrc} FROM runs`)) {
          tally(report.plans, r.plan, r.plan_crc, () => `run ${r.run_id}: plan`);
          tally(report.checkpoints, r.checkpoint, r.checkpoint_crc, () => `run ${r.run_id}: checkpoint in its row`);
        }
      }
      if (columns(db, 'artifacts').size > 0) {
        for (const r of read<{ digest: string; bytes: Buffer }>('SELECT digest, bytes FROM artifacts')) {
          if (isSealed(r.bytes)) {
            report.artifacts.unchecked++;
            continue;
          }
          report.artifacts.checked++;
          if (sha256Digest(r.bytes) === r.digest) continue;
          report.artifacts.damagedCount++;
          if (report.artifacts.damaged.length < sqliteLimits.doctorProblemsMax) report.artifacts.damaged.push(`artifact ${r.digest}`);
        }
      }
    } catch (err) {
      // Reading the rows themselves failed: SQLite met a damaged page on the way.
      report.integrity = [...report.integrity.filter((i) => i !== 'ok'), `reading the rows: ${(err as { code?: string }).code ?? 'error'}: ${(err as Error).message}`];
    }
    report.healthy = report.integrity.length === 1 && report.integrity[0] === 'ok' && [report.journalRows, report.checkpoints, report.plans, report.artifacts].every((c) => c.damagedCount === 0);
    return report;
  } finally {
    db.close();
  }
}
