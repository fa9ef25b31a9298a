// Leases on a store that machines share are compared across their clocks: an expiry written by
// one machine's clock is read by another's. A process whose clock is too far from the store's
// (here: its clock made to run a minute ahead, as a machine without NTP would) takes no lease and
// claims nothing, with `lease.clock-skew`, until its clock agrees again. The tool's log, outside
// the store, is the oracle of what ran where.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { tempDir } from '../helpers/node-host.js';
import { pgUrl } from '../helpers/postgres.js';
import { template, until } from './helpers.js';

const schema = `skew_${process.pid}_${Date.now() % 1_000_000}`;
const store = `${pgUrl}?schema=${schema}`;

afterAll(async () => {
  const c = new Client({ connectionString: pgUrl });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
});

const charge = template('skew-charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
  ['start', 'charge'],
  ['charge', 'end'],
], { requires: ['tool:charge'] });

describe('a process whose clock is far from a shared store\'s', () => {
  it('takes no lease and claims nothing until its clock agrees again; a small offset is allowed', async () => {
    const dir = tempDir();
    const log = join(dir, 'charges.log');
    writeFileSync(log, '');
    const opened: WorkflowRuntime[] = [];
    const open = async (name: string, offset: { ms: number }, logs: string[] = []) => {
      const rt = await WorkflowRuntime.open({
        store,
        ownerId: name,
        leaseTtlMs: 8_000,
        pollMs: 20,
        now: () => Date.now() + offset.ms,
        log: (level, message) => logs.push(`${level} ${message}`),
        tools: { charge: () => (appendFileSync(log, `${name}\n`), { charged: 1 }) },
      });
      opened.push(rt);
      return rt;
    };
    try {
      const ahead = { ms: 60_000 };
      const skewedLogs: string[] = [];
      const skewed = await open('skewed', ahead, skewedLogs);
      // The bound is an eighth of the lease lifetime: 1 s here. Half of it is allowed.
      const near = await open('near', { ms: 500 });
      await expect(skewed.launch(charge)).rejects.toMatchObject({ code: 'lease.clock-skew' });
      const error = skewedLogs.filter((l) => l.startsWith('error lease.clock-skew'));
      expect(error).toHaveLength(1);
      const [, apart] = /clock is (\d+) ms ahead of the store's; at most 1000 ms are allowed/.exec(error[0]) ?? [];
      expect(Math.abs(Number(apart) - 60_000)).toBeLessThan(1_000);
      // A queued run is claimed by the worker whose clock agrees, never by the skewed one.
      const skewedWorker = await skewed.startWorker({ idlePollMs: 20 });
      const queued = await near.launch(charge, { executionMode: 'background' });
      await new Promise((r) => setTimeout(r, 300));
      expect((await near.getRun(queued.runId)).status).toBe('queued');
      expect(readFileSync(log, 'utf8')).toBe('');
      expect(skewedWorker.stats).toMatchObject({ started: 0, takenOver: 0 });
      expect(skewedWorker.stats.clockSkewSkips).toBeGreaterThan(0);
      await near.startWorker({ idlePollMs: 20 });
      expect((await queued.result).status).toBe('completed');
      expect(readFileSync(log, 'utf8')).toBe('near\n');
      expect((await near.launch(charge).then((h) => h.result)).status).toBe('completed');
      // Once a check finds the clocks agree again, the process takes leases again.
      ahead.ms = 0;
      await (skewed as unknown as { kernel: { leases: { checkClock(): Promise<void> } } }).kernel.leases.checkClock();
      expect(skewedLogs.some((l) => l.startsWith("info this process's clock agrees with the store's again"))).toBe(true);
      expect((await (await skewed.launch(charge)).result).status).toBe('completed');
      expect(readFileSync(log, 'utf8')).toBe('near\nnear\nskewed\n');
    } finally {
      // Closed with their workers still running: `close` stops them first (it used to hang).
      for (const rt of opened) await rt.close();
    }
  }, 60_000);
});
