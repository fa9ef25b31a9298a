// Damaged storage on the router host, with real router processes: a torn last record is dropped
// and logged. Refused (exit 65, `store.truncated` / `store.corrupt`, with byte counts) unless the
// operator passes `--accept-loss`, which is logged: a journal cut short of what was committed,
// damaged before its end or missing; a receipt log lost while a tool was in flight; receipts of
// attempts claimed after journal records that are gone.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir, memoryFlags } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cliJs = path.join(root, 'dist/hosts/router/cli.js');
const fixtures = path.join(root, 'test/router/fixtures');
const damagedExit = 65;

interface Setup {
  state: string;
  config: string;
  manifest: string;
  side: string;
}

function setup(sleepSeconds = 0): Setup {
  const work = tempDir('router-damage-');
  const side = path.join(work, 'executions.txt');
  const script = path.join(work, 'step.sh');
  fs.writeFileSync(script, `printf '%s\\n' "$AGENT_WORKFLOW_INVOCATION_ID" >> "$SIDE_FILE"\nsleep ${sleepSeconds}\nprintf '{"n":%s}' "$(( $1 + 1 ))"\n`);
  const tool = { executable: '/bin/sh', args: [script, '{{input.n}}'], timeoutMs: 30_000, env: { SIDE_FILE: side, PATH: '/usr/bin:/bin' } };
  const config = path.join(work, 'host.mjs');
  fs.writeFileSync(config, `export default { tools: { step: ${JSON.stringify(tool)} } };\n`);
  const manifest = path.join(work, 'runs.json');
  fs.writeFileSync(manifest, JSON.stringify([{ template: path.join(fixtures, 'kill-workflow.json'), input: { n: 1 }, count: 4 }]));
  return { state: path.join(work, 'state'), config, manifest, side };
}

function router(s: Setup, extra: string[] = [], options: { runs?: boolean; killWhen?: () => boolean } = {}): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  const args = [...memoryFlags, cliJs, 'start', '--dir', s.state, '--profile', 'edge', '--config', s.config, '--cadence-ms', '2', '--until-idle', ...(options.runs ? ['--runs', s.manifest] : []), ...extra];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  const poll = options.killWhen && setInterval(() => options.killWhen!() && child.kill('SIGKILL'), 20);
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      if (poll) clearInterval(poll);
      resolve({ code, signal, stdout, stderr });
    }),
  );
}

const executions = (s: Setup) => (fs.existsSync(s.side) ? fs.readFileSync(s.side, 'utf8').split('\n').filter(Boolean) : []);
const journal = (s: Setup) => path.join(s.state, 'journal.log');

async function completedRouter(): Promise<Setup> {
  const s = setup();
  const first = await router(s, [], { runs: true });
  expect(first.code, first.stderr).toBe(0);
  expect(executions(s)).toHaveLength(12);
  return s;
}

describe('router host: damaged storage', () => {
  it('refuses a journal truncated before what was committed, with the byte counts, until the loss is accepted', async () => {
    const s = await completedRouter();
    const bytes = fs.readFileSync(journal(s));
    for (const fraction of [0.3, 0.6, 0.95]) {
      const cut = Math.floor(bytes.length * fraction);
      fs.writeFileSync(journal(s), bytes.subarray(0, cut));
      const refused = await router(s);
      expect(refused.code, refused.stderr).toBe(damagedExit);
      expect(refused.stderr).toMatch(/store\.truncated/);
      expect(refused.stderr).toContain(`but ${bytes.length} bytes were committed`);
      // Nothing is cut while refusing, and no tool ran again.
      expect(fs.readFileSync(journal(s)).length).toBe(cut);
      expect(executions(s)).toHaveLength(12);
    }
    const accepted = await router(s, ['--accept-loss']);
    expect([0, 1], accepted.stderr).toContain(accepted.code);
    expect(accepted.stderr).toMatch(/journal\.log: accepted loss \(store\.truncated\)/);
    // The accepted state is the new mark: the next start opens without complaint.
    const next = await router(s);
    expect([0, 1], next.stderr).toContain(next.code);
    expect(next.stderr).not.toMatch(/accepted loss|store\.truncated/);
  }, 120_000);

  it('drops a torn last record and says how many bytes', async () => {
    const s = await completedRouter();
    const torn = Buffer.from([0xff, 0xa7, 0x01, 0x00, 0, 0, 0, 0, 0xe8, 0x03, 0, 0, 0x7b, 0x22]);
    fs.appendFileSync(journal(s), torn);
    const run = await router(s);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`journal.log: dropped a torn last record of ${torn.length} bytes`);
    expect(executions(s)).toHaveLength(12);
  }, 60_000);

  it('refuses a record with a bad checksum followed by more records, and a missing journal', async () => {
    const s = await completedRouter();
    const bytes = fs.readFileSync(journal(s));
    const damaged = Buffer.from(bytes);
    damaged[Math.floor(bytes.length / 2)]! ^= 0x10;
    fs.writeFileSync(journal(s), damaged);
    const corrupt = await router(s);
    expect(corrupt.code, corrupt.stderr).toBe(damagedExit);
    expect(corrupt.stderr).toMatch(/store\.corrupt/);
    fs.rmSync(journal(s));
    const missing = await router(s);
    expect(missing.code, missing.stderr).toBe(damagedExit);
    expect(missing.stderr).toContain(`journal.log is missing, but ${bytes.length} bytes were committed`);
    expect(executions(s)).toHaveLength(12);
  }, 90_000);

  it('refuses to start when receipts.log is lost while a tool was in flight, so the tool never runs again', async () => {
    const s = setup(3);
    const killed = await router(s, [], { runs: true, killWhen: () => executions(s).length > 0 });
    expect(killed.signal).toBe('SIGKILL');
    const ran = executions(s);
    expect(ran.length).toBeGreaterThan(0);
    fs.rmSync(path.join(s.state, 'receipts.log'));
    const refused = await router(s);
    expect(refused.code, refused.stderr).toBe(damagedExit);
    expect(refused.stderr).toMatch(/store\.truncated: .*receipts\.log is missing/);
    expect(executions(s)).toEqual(ran);
  }, 60_000);

  it('refuses receipts of attempts claimed after journal records that are gone, even without the journal mark', async () => {
    const s = setup(3);
    const killed = await router(s, [], { runs: true, killWhen: () => executions(s).length > 0 });
    expect(killed.signal).toBe('SIGKILL');
    const ran = executions(s);
    // The journal loses every record, and its mark with it: only the receipts remember.
    fs.truncateSync(journal(s), 16);
    fs.rmSync(`${journal(s)}.mark`, { force: true });
    const refused = await router(s);
    expect(refused.code, refused.stderr).toBe(damagedExit);
    expect(refused.stderr).toMatch(/store\.truncated: receipts\.log holds \d+ attempt\(s\) claimed after journal records that are gone/);
    expect(executions(s)).toEqual(ran);
    const accepted = await router(s, ['--accept-loss']);
    expect([0, 1], accepted.stderr).toContain(accepted.code);
    expect(accepted.stderr).toMatch(/accepted loss \(store\.truncated\): receipts\.log holds/);
  }, 60_000);
});
