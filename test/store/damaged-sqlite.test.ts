// A damaged SQLite store file, as the CLI meets it (real processes on a real file): a byte changed
// inside a journal row is found when the row is read (`trace`, `export`: exit 9, `store.corrupt`
// naming the run and seqs) and by `doctor`, while `runs` and a new `run` do not read it; a damaged
// page is refused when the store opens (quick_check: `runs`, `trace`, `export`, `run` exit 9); a
// sound store passes `doctor`, an old one is migrated and says what it could not check.
import BetterSqlite3 from 'better-sqlite3';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { examplePath, runCli } from '../helpers/cli.js';
import { chain, openRuntime, planWithoutFlags, tempDir } from '../helpers/node-host.js';
import { schemaVersion } from '../../dist/hosts/node/stores/sqlite/migrations.js';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';

const marker = 'PAYLOADMARKERabcdefghijklmnopqrstuvwxyz';
const echo = chain('echo-once', [{ id: 'say', uses: 'tool.call@1', config: { tool: 'echo' }, inputs: { text: { source: 'input', path: '/text' } } }], { requires: ['tool:echo'] });

/** A store with two finished runs, its WAL folded into the file; the id of the run that carries the marker. */
async function storeWithRuns(): Promise<{ dir: string; file: string; marked: string; other: string }> {
  const dir = tempDir('adw-damaged-');
  const rt = await openRuntime({ dir, tools: { echo: { execute: (input: { text: string }) => ({ text: input.text }) } } });
  // The marked run's plan is one without `checkpoint-v3`: it ends with a checkpoint, which carries the marker too.
  const older = planWithoutFlags(await rt.compile(echo), ['checkpoint-v3']);
  const marked = (await (await rt.launch({ type: 'plan', plan: older }, { input: { text: marker } })).settled()).runId;
  const other = (await (await rt.launch({ type: 'inline', template: echo }, { input: { text: 'plain' } })).settled()).runId;
  await rt.close();
  const file = join(dir, 'workflow.db');
  const db = new BetterSqlite3(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { dir, file, marked, other };
}

const cli = (dir: string, ...args: string[]) => runCli([...args, '--dir', dir]);
const echoCli = [examplePath('echo/echo.json'), '--config', examplePath('echo/agent-workflow.config.mjs')];
const errorOf = (r: { out: any[] }) => r.out.find((l) => l.kind === 'Error')?.error;

describe('a damaged SQLite store', () => {
  it('a byte changed inside a journal row: the commands that read it exit 9 naming the run, doctor lists it', async () => {
    const { dir, file, marked, other } = await storeWithRuns();
    expect((await cli(dir, 'doctor')).code).toBe(0);

    // Every copy of the input in the file (journal rows, the checkpoint): one letter each, so the
    // JSON stays valid and every length the same.
    const bytes = readFileSync(file);
    let copies = 0;
    for (let at = bytes.indexOf(marker); at >= 0; at = bytes.indexOf(marker, at + 1), copies++) bytes[at + 20] = 'Z'.charCodeAt(0);
    expect(copies).toBeGreaterThan(1);
    writeFileSync(file, bytes);

    for (const command of [['trace', marked], ['export', marked]]) {
      const r = await cli(dir, ...command);
      expect([command[0], r.code]).toEqual([command[0], 9]);
      expect(errorOf(r)).toMatchObject({ code: 'store.corrupt', message: expect.stringMatching(new RegExp(`^run ${marked}: (the journal row for seq \\d+\\.\\.\\d+|its checkpoint) does not match the checksum`)) });
    }
    // The other run's rows are sound and read as before; the run list, and a new run, read no
    // journal row of the damaged run (doctor is what finds it).
    expect((await cli(dir, 'trace', other)).code).toBe(0);
    expect((await cli(dir, 'runs')).code).toBe(0);
    const fresh = await cli(dir, 'run', ...echoCli, '--input', '{"text":"after"}');
    expect(fresh.code).toBe(0);

    const doctor = await runCli(['doctor', '--store', file]);
    expect(doctor.code).toBe(9);
    const report = doctor.out.find((l) => l.kind === 'DoctorReport');
    expect(report).toMatchObject({ healthy: false, schemaVersion: schemaVersion, integrity: ['ok'], journalRows: { unchecked: 0 }, checkpoints: { damagedCount: 1, damaged: [`run ${marked}: checkpoint in its row`] } });
    expect(report.journalRows.damagedCount).toBeGreaterThan(0);
    expect(report.journalRows.damaged.every((d: string) => new RegExp(`^run ${marked}: journal row seq \\d+\\.\\.\\d+$`).test(d))).toBe(true);
    expect(report.journalRows.checked).toBeGreaterThan(2);
    expect(report.plans).toMatchObject({ checked: 3, damagedCount: 0 });
    expect(doctor.stderr).toContain(`damaged: run ${marked}`);
  }, 60_000);

  it('an approval for a paused run whose journal is damaged is refused with store.corrupt (exit 9), once, not retried forever', async () => {
    const dir = tempDir('adw-damaged-');
    const gated = chain('gated-damaged', [{ id: 'gate', uses: 'human.approval@1' }], { requires: ['approval'] });
    const rt = await openRuntime({ dir });
    const paused = await (await rt.launch({ type: 'inline', template: gated }, { input: { note: marker } })).settled();
    expect(paused.status).toBe('paused');
    await rt.close();
    const file = join(dir, 'workflow.db');
    const db = new BetterSqlite3(file);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const bytes = readFileSync(file);
    for (let at = bytes.indexOf(marker); at >= 0; at = bytes.indexOf(marker, at + 1)) bytes[at + 20] = 'Z'.charCodeAt(0);
    writeFileSync(file, bytes);
    const approve = await cli(dir, 'approve', paused.runId, 'gate', '--by', 'alice');
    expect([approve.code, errorOf(approve)?.code]).toEqual([9, 'store.corrupt']);
    expect(errorOf(approve)?.message).toContain(`run ${paused.runId}:`);
    // The refusal is recorded: the run still waits, and nothing of it was committed.
    const runs = await cli(dir, 'runs');
    expect(runs.out[0].runs.find((r: { runId: string }) => r.runId === paused.runId)).toMatchObject({ status: 'paused' });
  }, 60_000);

  it('a damaged page: the store is refused when it opens (quick_check), and doctor says what SQLite found', async () => {
    const { dir, file, marked } = await storeWithRuns();
    const bytes = readFileSync(file);
    const pageSize = bytes.readUInt16BE(16);
    // The type byte of page 2's b-tree header: no page type is 0.
    bytes[pageSize] = 0;
    writeFileSync(file, bytes);
    for (const command of [['runs'], ['trace', marked], ['export', marked], ['run', ...echoCli, '--input', '{"text":"after"}']]) {
      const r = await cli(dir, ...command);
      expect([command[0], r.code, errorOf(r)?.code]).toEqual([command[0], 9, 'store.corrupt']);
    }
    const doctor = await cli(dir, 'doctor');
    expect(doctor.code).toBe(9);
    const report = doctor.out.find((l) => l.kind === 'DoctorReport');
    expect(report.healthy).toBe(false);
    expect(report.integrity.join(' ')).not.toBe('ok');

    // The bound: a file larger than it is opened without the check (the damage is met, if at all,
    // when SQLite reads the page); a bound that is not a byte count is refused.
    const size = readFileSync(file).length;
    expect(() => SqliteJournalStore.open(file)).toThrow(expect.objectContaining({ code: 'store.corrupt' }));
    SqliteJournalStore.open(file, { quickCheckBytesMax: size - 1 }).close();
    SqliteJournalStore.open(file, { quickCheckBytesMax: 0 }).close();
    expect(() => SqliteJournalStore.open(file, { quickCheckBytesMax: size })).toThrow(expect.objectContaining({ code: 'store.corrupt' }));
    for (const bad of [-1, 1.5, Number.NaN]) expect(() => SqliteJournalStore.open(file, { quickCheckBytesMax: bad })).toThrow(expect.objectContaining({ code: 'store.bad-option' }));
    const config = join(dir, 'bound.config.mjs');
    writeFileSync(config, `export default { dir: '.', sqliteQuickCheckBytesMax: -1 };\n`);
    const badBound = await runCli(['runs', '--config', config]);
    expect([badBound.code, errorOf(badBound)?.code]).toEqual([2, 'store.bad-option']);
  }, 60_000);

  it('an old store (schema v11) passes doctor with its values counted as unchecked; a missing one is not found', async () => {
    const dir = tempDir('adw-damaged-');
    copyFileSync(new URL('../fixtures/stores/v11.db', import.meta.url), join(dir, 'workflow.db'));
    const doctor = await cli(dir, 'doctor');
    expect(doctor.code).toBe(0);
    const report = doctor.out.find((l) => l.kind === 'DoctorReport');
    expect(report).toMatchObject({ healthy: true, schemaVersion: 11, integrity: ['ok'], journalRows: { checked: 0, damagedCount: 0 } });
    expect(report.journalRows.unchecked).toBeGreaterThan(0);
    expect(doctor.stderr).toContain('carry no checksum');
    expect((await cli(tempDir('adw-damaged-'), 'doctor')).code).toBe(6);

    // Opened by a command, the old store is migrated to the current version: its old rows still read (unchecked),
    // a new run's rows carry their checksum.
    const before = (await cli(dir, 'runs')).out.filter((l) => l.kind !== 'Error');
    expect(before.length).toBeGreaterThan(0);
    expect((await cli(dir, 'run', ...echoCli, '--input', '{"text":"new"}')).code).toBe(0);
    const migrated = (await cli(dir, 'doctor')).out.find((l) => l.kind === 'DoctorReport');
    expect(migrated).toMatchObject({ healthy: true, schemaVersion: schemaVersion, journalRows: { unchecked: report.journalRows.unchecked, damagedCount: 0 } });
    expect(migrated.journalRows.checked).toBeGreaterThan(0);

    const pg = await runCli(['doctor', '--store', 'postgres://127.0.0.1/test']);
    expect([pg.code, errorOf(pg)?.code]).toEqual([2, 'doctor.unsupported-store']);
  }, 60_000);
});
