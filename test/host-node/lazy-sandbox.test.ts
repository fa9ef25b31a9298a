// The Node host loads QuickJS on first need: runs, templates and replays without a script node
// never load it, and whatever first needs it (a launch, a validation, a run woken after a
// restart on SQLite or PostgreSQL, a recorded replay) loads it and then does what was asked.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { assertPostgresReachable, pgUrl } from '../helpers/postgres.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

const approvalThenScript = JSON.parse(readFileSync(new URL('../cases/approval-approved/template.json', import.meta.url), 'utf8'));
const noop = { noop: { execute: () => ({ done: true }) } };
const twoTools = chain('two-tools', [
  { id: 'a', uses: 'tool.call@1', config: { tool: 'noop' } },
  { id: 'b', uses: 'tool.call@1', config: { tool: 'noop' } },
], { requires: ['tool:noop'] });
const badScript = chain('bad-script', [{ id: 's', uses: 'core.script@1', config: { source: 'return (' } }]);
const doubled = chain('doubled', [{ id: 's', uses: 'core.script@1', config: { source: 'return input.n * 2' }, inputs: { n: { source: 'input', path: '/n' } } }], {
  outputs: { value: { source: 'output', nodeId: 's' } },
});

const schema = `lazy_sandbox_${process.pid}_${Date.now() % 1_000_000}`;
afterAll(async () => {
  const c = new pg.Client({ connectionString: pgUrl });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
});

describe('the script sandbox loads on first need', () => {
  it('is not loaded by runs and templates without scripts; a validation that needs it loads it', async () => {
    const rt = await openRuntime({ tools: noop });
    try {
      const run = await rt.launch(twoTools, { input: {} });
      expect(await run.result).toMatchObject({ status: 'completed' });
      expect((await rt.validate(twoTools)).ok).toBe(true);
      expect(await rt.replay(run.runId, { mode: 'recorded' })).toMatchObject({ identical: true });
      expect(rt.engine.scriptsLoaded).toBe(false);

      const report = await rt.validate(badScript);
      expect(report.ok).toBe(false);
      expect(report.errors.map((e) => e.pointer)).toContain('/spec/nodes/1/config/source');
      expect(rt.engine.scriptsLoaded).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('loads for the first launch of a template with a script and runs it', async () => {
    const rt = await openRuntime();
    try {
      expect(rt.engine.scriptsLoaded).toBe(false);
      const run = await rt.launch(doubled, { input: { n: 21 } });
      expect(await run.result).toMatchObject({ status: 'completed', output: { value: 42 } });
      expect(rt.engine.scriptsLoaded).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('a plain engine call that needs it says so with a typed error, and withScripts loads it', async () => {
    const rt = await openRuntime();
    try {
      expect(() => rt.engine.validate(JSON.stringify(badScript))).toThrow(expect.objectContaining({ code: 'sandbox.not-loaded' }));
      const report = await rt.engine.withScripts(() => rt.engine.validate(JSON.stringify(badScript)));
      expect(report.ok).toBe(false);
    } finally {
      await rt.close();
    }
  });

  const resumeAfterRestart = async (open: () => Promise<WorkflowRuntime>) => {
    const first = await open();
    let runId: string;
    try {
      const run = await first.launch(approvalThenScript, { input: { change: 'c-1' } });
      runId = run.runId;
      expect(await first.getRun(runId)).toMatchObject({ status: 'paused' });
    } finally {
      await first.close();
    }
    // A fresh process: the run's plan names a script, the sandbox is not loaded yet.
    const second = await open();
    try {
      expect(second.engine.scriptsLoaded).toBe(false);
      await second.approve(runId, 'ok', { by: 'release-bot' });
      const outcome = await second.follow(runId).result;
      expect(outcome).toMatchObject({ status: 'completed', output: { result: 'shipped by release-bot' } });
      expect(second.engine.scriptsLoaded).toBe(true);
    } finally {
      await second.close();
    }
    const third = await open();
    try {
      expect(await third.replay(runId, { mode: 'recorded' })).toMatchObject({ identical: true });
    } finally {
      await third.close();
    }
  };

  it('a run woken after a restart loads it (SQLite)', async () => {
    const dir = tempDir();
    await resumeAfterRestart(() => WorkflowRuntime.open({ dir, log: () => undefined }));
  });

  it('a run woken after a restart loads it (PostgreSQL, no synchronous load)', async () => {
    await assertPostgresReachable();
    const dir = tempDir();
    await resumeAfterRestart(() => WorkflowRuntime.open({ dir, store: `${pgUrl}?schema=${schema}`, log: () => undefined }));
  });
});
