// SQLite has no NOTIFY: a process that queues a run or posts a command touches a wake file next
// to the database, and workers in other processes watch it. The worker here runs in its own
// process with a poll interval of ten minutes, so the work it does within the test's time was
// woken, never polled: a queued run is started, and an approval posted from this process is
// applied by the worker (the run gave its lease up while it waited for a person). The tool's own
// log (outside the store) says what ran.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { tempDir } from '../helpers/node-host.js';
import { template } from './helpers.js';

const entry = new URL('../../dist/hosts/node/index.js', import.meta.url).href;
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

const chargeThenAsk = template(
  'wake-charge',
  [
    { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' }, inputs: { order: { source: 'input', path: '/order' } } },
    { id: 'gate', uses: 'human.approval@1', config: { prompt: 'ship?' } },
    { id: 'ship', uses: 'tool.call@1', config: { tool: 'ship' }, inputs: { order: { source: 'input', path: '/order' } } },
  ],
  [
    ['start', 'charge'],
    ['charge', 'gate'],
    ['gate', 'ship'],
    ['ship', 'end'],
  ],
  { requires: ['approval', 'tool:charge', 'tool:ship'] },
);

/** A worker process on the store that polls every ten minutes; resolves once it is serving. */
function startWorker(dir: string, log: string): Promise<ChildProcess> {
  const script = `
    const { appendFileSync } = await import('node:fs');
    const { WorkflowRuntime } = await import(${JSON.stringify(entry)});
    const note = (line) => appendFileSync(${JSON.stringify(log)}, line + '\\n');
    const rt = await WorkflowRuntime.open({ dir: ${JSON.stringify(dir)}, log: () => undefined, tools: {
      charge: (input) => { note('charge ' + input.order); return { charged: input.order }; },
      ship: (input) => { note('ship ' + input.order); return { shipped: input.order }; },
    } });
    await rt.startWorker({ idlePollMs: 600000 });
    process.stdout.write('serving\\n');
    process.on('SIGTERM', async () => { await rt.close(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('serving')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`the worker exited with ${code} before serving`)));
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('SQLite wake files', () => {
  it('a worker in another process starts a queued run and applies an approval without waiting for its poll', async () => {
    const dir = tempDir('adw-wake-');
    const log = join(dir, 'tools.log');
    writeFileSync(log, '');
    // The store exists before the worker opens it; the worker's first claim finds nothing.
    const producer = await WorkflowRuntime.open({ dir, log: () => undefined, tools: {} });
    const worker = await startWorker(dir, log);
    try {
      expect(existsSync(join(dir, 'workflow.db-wake-queue'))).toBe(true);
      await new Promise((r) => setTimeout(r, 200)); // past the worker's first (empty) claim
      const handle = await producer.launch(chargeThenAsk, { input: { order: 'o-1' }, executionMode: 'background' });
      const waiting = await until('the run to wait for its approval', async () => {
        const run = await producer.getRun(handle.runId);
        return run.status === 'paused' ? run : undefined;
      });
      expect(waiting).toMatchObject({ pausedReason: 'approval' });
      expect((await producer.store.getRun(handle.runId))?.lease?.owner).toBeUndefined();
      expect(readFileSync(log, 'utf8')).toBe('charge o-1\n');

      const applied = await producer.approve(handle.runId, 'gate', { by: 'ops', timeoutMs: 20_000 });
      expect(applied).toMatchObject({ status: 'completed' });
      expect(applied.appliedBy).not.toBe(producer.ownerId);
      expect(readFileSync(log, 'utf8')).toBe('charge o-1\nship o-1\n');
    } finally {
      worker.kill('SIGTERM');
      await producer.close();
    }
  }, 60_000);
});
