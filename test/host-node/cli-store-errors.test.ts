// What the CLI does when the store is not usable: each failure has its own documented exit code
// and a message naming the file; a file that is not our store is refused and left untouched.
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { examplePath, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/node-host.js';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');
const echo = [examplePath('echo/echo.json'), '--config', examplePath('echo/agent-workflow.config.mjs')];

async function storeWithRun(): Promise<{ dir: string; db: string; runId: string }> {
  const dir = tempDir('adw-store-');
  const r = await runCli(['run', ...echo, '--dir', dir, '--input', '{"text":"kept"}']);
  expect(r.code).toBe(0);
  return { dir, db: join(dir, 'workflow.db'), runId: r.out[0].runId };
}

/**
 * A host module (the echo example's) under which journal event inserts fail as SQLite does when
 * the disk is full — every one, or those whose row also satisfies `when` (JS over `args`).
 */
function fullDiskHostModule(cwd: string, when: string): string {
  const config = join(cwd, 'full-disk.config.mjs');
  writeFileSync(
    config,
    `import { createRequire } from 'node:module';
const Database = createRequire(import.meta.url)(${JSON.stringify(require.resolve('better-sqlite3'))});
const probe = new Database(':memory:');
const statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
probe.close();
const run = statement.run;
statement.run = function (...args) {
  if (this.source.startsWith('INSERT INTO events')${when ? ` && ${when}` : ''}) throw new Database.SqliteError('database or disk is full', 'SQLITE_FULL');
  return run.apply(this, args);
};
export { default } from ${JSON.stringify(examplePath('echo/agent-workflow.config.mjs'))};
`,
  );
  return config;
}

function expectError(r: { code: number; out: any[] }, exit: number, code: string, file: string): void {
  expect(r.out).toEqual([expect.objectContaining({ kind: 'Error', error: expect.objectContaining({ code }) })]);
  expect(r.out[0].error.message).toContain(file);
  expect(r.code).toBe(exit);
}

describe('a file that is not our store', () => {
  it('refuses a zero-byte database file and leaves it empty (exit 9)', async () => {
    const dir = tempDir('adw-store-');
    const db = join(dir, 'workflow.db');
    writeFileSync(db, '');
    expectError(await runCli(['runs', '--dir', dir]), 9, 'store.not-a-store', db);
    expectError(await runCli(['run', ...echo, '--dir', dir, '--input', '{"text":"x"}']), 9, 'store.not-a-store', db);
    expect(statSync(db).size).toBe(0);
  });

  it('refuses a file that is not SQLite, unchanged (exit 9)', async () => {
    const dir = tempDir('adw-store-');
    const db = join(dir, 'workflow.db');
    writeFileSync(db, 'my notes, not a database\n');
    expectError(await runCli(['runs', '--dir', dir]), 9, 'store.not-a-store', db);
    expect(readFileSync(db, 'utf8')).toBe('my notes, not a database\n');
  });

  it("refuses a SQLite database with someone else's tables, unchanged (exit 9)", async () => {
    const dir = tempDir('adw-store-');
    const file = join(dir, 'workflow.db');
    const foreign = new Database(file);
    foreign.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices (total) VALUES (12.5);");
    foreign.close();
    const before = readFileSync(file);
    expectError(await runCli(['runs', '--dir', dir]), 9, 'store.not-a-store', file);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('refuses a store with a newer schema (exit 9)', async () => {
    const { dir, db } = await storeWithRun();
    const d = new Database(db);
    d.pragma('user_version = 999');
    d.close();
    expectError(await runCli(['runs', '--dir', dir]), 9, 'store.schema-too-new', db);
  });
});

describe('store failures', () => {
  it('reports a corrupt store with exit 9', async () => {
    const { dir, runId } = await storeWithRun();
    const db = join(dir, 'workflow.db');
    // Keep page 1 (header and schema), overwrite every later page with garbage.
    const size = statSync(db).size;
    const fd = openSync(db, 'r+');
    writeSync(fd, Buffer.alloc(size - 4096, 0xa5), 0, size - 4096, 4096);
    closeSync(fd);
    const r = await runCli(['trace', runId, '--dir', dir]);
    expect(r.code).toBe(9);
    expect(r.out[0].error.message).toMatch(/malformed|corrupt/);
  });

  it('reports permission denied on the state directory with exit 10, naming it', async () => {
    const { dir } = await storeWithRun();
    const asRoot = process.getuid?.() === 0;
    chmodSync(dir, 0o000);
    try {
      // root is never refused by file modes: run the CLI as nobody instead.
      const r = await runCli(['runs', '--dir', dir], { cwd: '/', ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
      expectError(r, 10, 'store.permission-denied', dir);
    } finally {
      chmodSync(dir, 0o700);
    }
  });

  it('reports a full disk with exit 11', async () => {
    // The host module makes every journal insert fail as SQLite does when the disk is full.
    const cwd = tempDir('adw-store-');
    const config = fullDiskHostModule(cwd, '');
    const r = await runCli(['run', examplePath('echo/echo.json'), '--config', config, '--dir', join(cwd, 'state'), '--input', '{"text":"x"}']);
    expect(r.code).toBe(11);
    expect(r.out[0].error.message).toContain('disk is full');
  });
});

describe('a fact lost after the launch', () => {
  it('ends the command with the store error when a later commit of its run fails, never hangs or exits 0', async () => {
    // The launch commits; the commit that would record the tool's result hits a full disk.
    const cwd = tempDir('adw-store-');
    // The events of a commit are bound as one flat list of parameters (several rows per INSERT).
    const config = fullDiskHostModule(cwd, "args.flat().map(String).join(' ').includes('capability.completed')");
    const r = await runCli(['run', examplePath('echo/echo.json'), '--config', config, '--dir', join(cwd, 'state'), '--input', '{"text":"x"}']);
    expect(r.out[r.out.length - 1], JSON.stringify(r)).toMatchObject({ kind: 'Error', error: { message: expect.stringContaining('disk is full') } });
    expect(r.code, JSON.stringify(r.out)).toBe(11);
  }, 30_000);
});

describe('conflicts', () => {
  it('exits 8 when a compare-and-set loses', async () => {
    const cwd = tempDir('adw-store-');
    const file = join(cwd, 'wf.json');
    writeFileSync(file, readFileSync(examplePath('echo/echo.json')));
    expect((await runCli(['draft', 'put', file], { cwd })).code).toBe(0);
    const r = await runCli(['draft', 'put', file], { cwd });
    expect(r.out[0]).toMatchObject({ kind: 'Error', error: { code: 'catalog.draft-conflict' } });
    expect(r.code).toBe(8);
  });
});
