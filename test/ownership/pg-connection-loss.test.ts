// A worker on PostgreSQL whose connections the server drops (a restart, a failover, an operator's
// pg_terminate_backend): the process stays up, says so in its log, reconnects, and runs the next
// queued run. Real `serve` process, real server; the tool's own log is the oracle.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { effects, lastJson, run, start, template, until, world, writeTemplate } from './helpers.js';

const charges = (w: ReturnType<typeof world>) => effects(w).filter((e) => e.tool === 'charge' && e.phase === 'start');
const schema = testSchema('t_conn_loss');
const store = `${pgUrl}?schema=${schema}`;

/** Terminates the backends of the processes started with `PGAPPNAME=<appName>`; answers how many. */
async function terminateBackends(appName: string): Promise<number> {
  const c = new pg.Client({ connectionString: pgUrl });
  await c.connect();
  try {
    const r = await c.query(`SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE application_name = $1`, [appName]);
    return r.rows.filter((row) => row.t === true).length;
  } finally {
    await c.end();
  }
}

describe('a worker on PostgreSQL whose connections are dropped', () => {
  it('stays up, logs the loss and the reconnect, and still runs queued work (nothing charged twice)', async () => {
    const w = world();
    const t = template('pg-charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
      ['start', 'charge'],
      ['charge', 'end'],
    ], { requires: ['tool:charge'], outputs: { receipt: { source: 'output', nodeId: 'charge' } } });
    const file = writeTemplate(w, 'pg-charge', t);
    // The worker's connections carry a name of their own, so only they are dropped (other test
    // files share the server).
    const worker = start(w, ['serve', '--store', store], { PGAPPNAME: schema });
    try {
      await until('the worker to serve', () => worker.out().includes('"Serving"'));
      const first = lastJson((await run(w, ['run', file, '--no-wait', '--store', store])).stdout);
      await until('the first run to complete', async () => lastJson((await run(w, ['runs', '--store', store])).stdout).runs.find((r: any) => r.runId === first.runId)?.status === 'completed');

      expect(await terminateBackends(schema)).toBeGreaterThan(0);
      // Give the process time to notice; it must not exit.
      await until('the worker to log the lost connection', () => worker.err().includes('wake-up connection to the store lost'));
      expect(worker.child.exitCode).toBeNull();

      const second = lastJson((await run(w, ['run', file, '--no-wait', '--store', store])).stdout);
      await until('the second run to complete', async () => lastJson((await run(w, ['runs', '--store', store])).stdout).runs.find((r: any) => r.runId === second.runId)?.status === 'completed', 30_000);
      await until('the worker to log the reconnect', () => worker.err().includes('wake-up connection to the store restored'));
      expect(worker.child.exitCode).toBeNull();
      expect(charges(w)).toHaveLength(2);
    } finally {
      worker.child.kill('SIGTERM');
      const stopped = await worker.done;
      expect(stopped.code, stopped.stderr).toBe(0);
    }
  }, 90_000);
});
