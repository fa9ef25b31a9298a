// Every way a second process meets a run, with real CLI processes on one store and the tools'
// own log as the oracle: nothing is charged twice, every command prints its result, and no run
// is left running without an owner.
import { describe, expect, it } from 'vitest';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { effects, lastJson, run, start, template, trace, until, world, writeTemplate } from './helpers.js';

const charges = (w: ReturnType<typeof world>) => effects(w).filter((e) => e.tool === 'charge' && e.phase === 'start');

describe('two processes on one run', () => {
  it('a second resume while the first is running the charge is applied by the owner: one charge, both print the result', async () => {
    const w = world();
    const t = template(
      'pay',
      [
        { id: 'lookup', uses: 'tool.call@1', config: { tool: 'lookup' }, readOnly: true },
        { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } },
      ],
      [
        ['start', 'lookup'],
        ['lookup', 'charge'],
        ['charge', 'end'],
      ],
      { requires: ['tool:lookup', 'tool:charge'], outputs: { receipt: { source: 'output', nodeId: 'charge' } } },
    );
    const file = writeTemplate(w, 'pay', t);
    // The first process dies while the read-only lookup is in flight.
    const first = start(w, ['run', file], { LOOKUP_MS: '60000' });
    await until('the lookup to start', () => effects(w).some((e) => e.tool === 'lookup'));
    const runId = await until('the run id', () => first.runId());
    first.child.kill('SIGKILL');
    await first.done;

    // Shell A resumes: the lookup is reissued (safe), then the charge runs for 8 s.
    const a = start(w, ['resume', runId], { CHARGE_MS: '8000' });
    await until('the charge to start', () => charges(w).length > 0);
    // Shell B resumes while A is charging.
    const b = await run(w, ['resume', runId]);
    const aDone = await a.done;

    expect(charges(w)).toHaveLength(1);
    expect(aDone.code).toBe(0);
    expect(lastJson(aDone.stdout)).toMatchObject({ kind: 'RunResult', status: 'completed', output: { receipt: { charged: 1 } } });
    expect(b.code).toBe(0);
    expect(lastJson(b.stdout)).toMatchObject({ kind: 'RunResult', status: 'completed', output: { receipt: { charged: 1 } } });
    const events = await trace(w, runId);
    expect(events.filter((e) => e.type === 'capability.abandoned')).toEqual([]);
    const completed = events.filter((e) => e.type === 'capability.completed' && e.payload.invocationId === charges(w)[0].invocationId);
    expect(completed).toHaveLength(1);
    // B's resume met the run while the charge was in flight (else this test proves nothing).
    const resumedByB = events.filter((e) => e.type === 'run.resumed' && e.payload.by === 'cli');
    expect(resumedByB.length).toBeGreaterThanOrEqual(2);
    expect(resumedByB[resumedByB.length - 1].seq).toBeLessThan(completed[0].seq);
  }, 60_000);

  it('an approval from another shell while a parallel tool is in flight is applied by the owner, and the run completes', async () => {
    const w = world({ SLOW_MS: '2500' });
    const t = template(
      'gate-and-work',
      [
        { id: 'gate', uses: 'human.approval@1', config: { prompt: 'go?' } },
        { id: 'slow', uses: 'tool.call@1', config: { tool: 'slow' } },
        { id: 'join', uses: 'core.script@1', config: { source: 'return { approvedBy: input.by, slow: input.slow }' }, inputs: { by: { source: 'output', nodeId: 'gate', path: '/by' }, slow: { source: 'output', nodeId: 'slow', path: '/slow' } } },
      ],
      [
        ['start', 'gate'],
        ['start', 'slow'],
        ['gate', 'join'],
        ['slow', 'join'],
        ['join', 'end'],
      ],
      { requires: ['approval', 'tool:slow'], outputs: { result: { source: 'output', nodeId: 'join' } } },
    );
    const owner = start(w, ['run', writeTemplate(w, 'gate', t)]);
    await until('the slow tool to start', () => effects(w).some((e) => e.tool === 'slow'));
    const runId = await until('the run id', () => owner.runId());
    const approved = await run(w, ['approve', runId, 'gate', '--by', 'alice']);
    const ownerDone = await owner.done;

    expect(approved.code).toBe(0);
    expect(lastJson(approved.stdout)).toMatchObject({ kind: 'RunResult', status: 'completed', output: { result: { approvedBy: 'alice', slow: true } } });
    expect(ownerDone.code).toBe(0);
    expect(lastJson(ownerDone.stdout)).toMatchObject({ status: 'completed' });
    expect(effects(w).filter((e) => e.tool === 'slow' && e.phase === 'start')).toHaveLength(1);
    // The approval was applied by the process that owned the run, through its inbox.
    expect(lastJson(approved.stdout).appliedBy).toContain(`/${owner.child.pid}/`);
  }, 60_000);

  it('a cancel from another process reaches the running tool through its AbortSignal', async () => {
    const w = world({ CHARGE_MS: '60000' });
    const t = template('long-charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
      ['start', 'charge'],
      ['charge', 'end'],
    ], { requires: ['tool:charge'] });
    const owner = start(w, ['run', writeTemplate(w, 'long', t)]);
    await until('the charge to start', () => charges(w).length > 0);
    const runId = await until('the run id', () => owner.runId());
    const cancelled = await run(w, ['cancel', runId, '--reason', 'customer asked']);
    const ownerDone = await owner.done;

    const said = `cancel: ${cancelled.stdout}${cancelled.stderr}\nowner: ${ownerDone.stdout}${ownerDone.stderr}`;
    expect(cancelled.code, said).toBe(0);
    expect(lastJson(cancelled.stdout), said).toMatchObject({ kind: 'RunResult', status: 'cancelled' });
    expect(ownerDone.code, said).toBe(5);
    await until('the tool to see the abort', () => effects(w).some((e) => e.tool === 'charge' && e.phase === 'aborted'));
    const events = await trace(w, runId);
    expect(events.filter((e) => e.type === 'run.cancelled')).toHaveLength(1);
    // What the tool really returned after the abort is kept as evidence; it wakes nothing.
    expect(events.find((e) => e.type === 'capability.late')).toMatchObject({ payload: { invocationId: charges(w)[0].invocationId, ok: true, output: { charged: 1 }, reason: 'run cancelled' } });
    expect(events[events.length - 1].type).toBe('capability.late');
    expect(events.find((e) => e.type === 'run.cancel-requested')?.origin.actor).toBe('operator:cli');
  }, 60_000);
});

describe('unknown outcomes and operators', () => {
  it('a second resolve --retry after the retried call became unknown again is refused until it names that unknown: one charge per attempt', async () => {
    const w = world({ CHARGE_MS: '60000' });
    const t = template('pay', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
      ['start', 'charge'],
      ['charge', 'end'],
    ], { requires: ['tool:charge'] });
    const owner = start(w, ['run', writeTemplate(w, 'pay', t)]);
    await until('the first charge to start', () => charges(w).length === 1);
    const runId = await until('the run id', () => owner.runId());
    owner.child.kill('SIGKILL');
    await owner.done;
    expect((await run(w, ['resume', runId])).code).toBe(4);

    // The operator retries; attempt 2 takes effect and the resolving process dies in it.
    const resolving = start(w, ['resolve', runId, 'charge', '--retry']);
    await until('the second charge to start', () => charges(w).length === 2);
    resolving.child.kill('SIGKILL');
    await resolving.done;
    const resumed = await run(w, ['resume', runId]);
    expect(resumed.code).toBe(4);
    const attention = lastJson(resumed.stdout).attention;
    expect(attention).toEqual([{ nodeId: 'charge', seq: expect.any(Number) }]);

    // The same command again (or a colleague on the same screen): refused, nothing charged.
    const again = await run(w, ['resolve', runId, 'charge', '--retry']);
    expect(again.code).toBe(8);
    expect(lastJson(again.stdout)).toMatchObject({ kind: 'Error', error: { code: 'resolve.unknown-unnamed' } });
    // Naming an older unknown is refused as stale.
    const stale = await run(w, ['resolve', runId, 'charge', '--retry', '--attention-seq', String(attention[0].seq - 1)]);
    expect(stale.code).toBe(8);
    expect(lastJson(stale.stdout)).toMatchObject({ kind: 'Error', error: { code: 'resolve.stale' } });
    expect(charges(w)).toHaveLength(2);

    // Named after a look at it: applied.
    const named = await run(w, ['resolve', runId, 'charge', '--succeeded', JSON.stringify({ charged: 1 }), '--attention-seq', String(attention[0].seq)]);
    expect(named.code).toBe(0);
    expect(lastJson(named.stdout)).toMatchObject({ kind: 'RunResult', status: 'completed' });
    expect(charges(w)).toHaveLength(2);
    expect(new Set(charges(w).map((c) => c.invocationId)).size).toBe(2);
  }, 90_000);

  it('resolving the unknown items of a foreach one by one from new processes ends the run, never leaves it running', async () => {
    const w = world({ CHARGE_MS: '60000' });
    const t = template(
      'batch',
      [{ id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 3, failurePolicy: 'continue', body: { uses: 'tool.call@1', config: { tool: 'charge' } } }, inputs: { items: { source: 'input', path: '/cards' } } }],
      [
        ['start', 'each'],
        ['each', 'end'],
      ],
      { requires: ['tool:charge'] },
    );
    const file = writeTemplate(w, 'batch', t);
    const first = start(w, ['run', file, '--input', JSON.stringify({ cards: [{ amount: 1 }, { amount: 2 }, { amount: 3 }] })]);
    await until('three charges to start', () => charges(w).length === 3);
    const runId = await until('the run id', () => first.runId());
    first.child.kill('SIGKILL');
    await first.done;

    // The owner is gone (a dead process on this machine): the resume takes the run over at once.
    const resumed = await run(w, ['resume', runId], { CHARGE_MS: '0' });
    expect(resumed.code).toBe(4);
    expect(lastJson(resumed.stdout)).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });

    // The retried charge takes a while: the resolving process must see it through, not drop it.
    const retry0 = await run(w, ['resolve', runId, 'each', '--retry', '--item', '0'], { CHARGE_MS: '1500' });
    expect(retry0.code).toBe(4);
    expect(lastJson(retry0.stdout)).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
    const retried = charges(w).filter((c) => c.item === 0).at(-1)!;
    expect(effects(w).some((e) => e.invocationId === retried.invocationId && e.phase === 'done')).toBe(true);
    expect((await trace(w, runId)).some((e) => e.type === 'capability.completed' && e.payload.invocationId === retried.invocationId)).toBe(true);
    const ok1 = await run(w, ['resolve', runId, 'each', '--succeeded', JSON.stringify({ charged: 2 }), '--item', '1']);
    expect(ok1.code).toBe(4);
    const last = await run(w, ['resolve', runId, 'each', '--fail', 'card declined', '--item', '2']);
    expect([0, 1]).toContain(last.code);
    expect(lastJson(last.stdout).status).toMatch(/^(completed|failed)$/);
    expect((lastJson((await run(w, ['runs'])).stdout).runs[0] as { status: string }).status).not.toBe('running');

    // Item 0 ran twice (once before the crash, once because an operator said retry); the others once.
    const byItem = new Map<number, number>();
    for (const c of charges(w)) byItem.set(c.item!, (byItem.get(c.item!) ?? 0) + 1);
    expect(Object.fromEntries(byItem)).toEqual({ 0: 2, 1: 1, 2: 1 });
  }, 90_000);

  it('a resolve the engine refuses prints a typed error and exits non-zero', async () => {
    const w = world();
    const t = template('quick', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
      ['start', 'charge'],
      ['charge', 'end'],
    ], { requires: ['tool:charge'] });
    const done = await run(w, ['run', writeTemplate(w, 'quick', t)]);
    expect(done.code).toBe(0);
    const runId = lastJson(done.stdout).runId;
    const refused = await run(w, ['resolve', runId, 'charge', '--retry']);
    expect(refused.code).not.toBe(0);
    expect(lastJson(refused.stdout)).toMatchObject({ kind: 'Error', error: { code: expect.stringMatching(/^(run\.terminal|resolve\.not-needed)$/) } });
  }, 60_000);
});

const pgStore = `${pgUrl}?schema=${testSchema('t_own_processes')}`;

describe.each([
  ['SQLite', {}],
  ['PostgreSQL', { STORE: pgStore }],
])('takeover and fencing (%s)', (_, storeEnv: Record<string, string>) => {
  it('a stalled owner loses the run after its lease expires; its late result is evidence, never a second effect', async () => {
    const w = world({ LEASE_TTL_MS: '1000', CHARGE_MS: '2500', ...storeEnv });
    const t = template('stall', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
      ['start', 'charge'],
      ['charge', 'end'],
    ], { requires: ['tool:charge'] });
    const owner = start(w, ['run', writeTemplate(w, 'stall', t)]);
    await until('the charge to start', () => charges(w).length > 0);
    const runId = await until('the run id', () => owner.runId());
    owner.child.kill('SIGSTOP');
    // A worker finds the expired lease and takes the run over: the charge's outcome is unknown.
    const worker = start(w, ['serve']);
    try {
      await until('the takeover', async () => (await trace(w, runId)).some((e) => e.type === 'node.needs-attention'));
      owner.child.kill('SIGCONT');
      const ownerDone = await owner.done;
      // The old owner's commit is refused by the fencing check; it says where the run stands.
      expect(ownerDone.code).toBe(4);
      expect(lastJson(ownerDone.stdout)).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
      const events = await until('the late outcome to be recorded', async () => {
        const e = await trace(w, runId);
        return e.some((x) => x.type === 'capability.late') && e;
      });
      const invocationId = charges(w)[0].invocationId;
      expect(events.find((e) => e.type === 'capability.late')).toMatchObject({ payload: { invocationId, ok: true, output: { charged: 1 } } });
      expect(events.filter((e) => e.type === 'capability.completed' && e.payload.invocationId === invocationId)).toEqual([]);
      expect(charges(w)).toHaveLength(1);
      // The run waits for a person, with the evidence at hand; nobody runs it meanwhile.
      const state = lastJson((await run(w, ['runs'])).stdout).runs[0];
      expect(state).toMatchObject({ runId, status: 'paused' });
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
    }
  }, 60_000);
});

describe('the queue and workers', () => {
  it('run --no-wait only queues; without a worker it says so; serve runs it and stops gracefully on SIGTERM', async () => {
    const w = world();
    const t = template('queued', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
      ['start', 'charge'],
      ['charge', 'end'],
    ], { requires: ['tool:charge'], outputs: { receipt: { source: 'output', nodeId: 'charge' } } });
    const queued = await run(w, ['run', writeTemplate(w, 'queued', t), '--no-wait']);
    expect(queued.code).toBe(0);
    const accepted = lastJson(queued.stdout);
    expect(accepted).toMatchObject({ kind: 'RunQueued', status: 'queued', workers: 0 });
    expect(queued.stderr).toContain('no worker is running');
    await new Promise((r) => setTimeout(r, 300));
    expect(charges(w)).toEqual([]);
    expect(lastJson((await run(w, ['runs'])).stdout).runs[0]).toMatchObject({ runId: accepted.runId, status: 'queued', waitReason: expect.stringContaining('worker') });
    // `resume` of a run that never started answers at once that it waits for a worker (exit 12),
    // instead of following it forever; it starts nothing itself.
    const resumed = await run(w, ['resume', accepted.runId]);
    expect(resumed.code).toBe(12);
    expect(lastJson(resumed.stdout)).toEqual({ apiVersion: 'agent-workflow.cli/v1', kind: 'RunQueued', runId: accepted.runId, status: 'queued', workers: 0 });
    expect(resumed.stderr).toContain('no worker is running');
    expect(charges(w)).toEqual([]);

    const worker = start(w, ['serve']);
    await until('the worker to serve', () => worker.out().includes('"Serving"'));
    await until('the queued run to complete', async () => lastJson((await run(w, ['runs'])).stdout).runs[0].status === 'completed');
    expect(charges(w)).toHaveLength(1);
    // A worker with nothing to do keeps serving.
    await new Promise((r) => setTimeout(r, 500));
    expect(worker.child.exitCode).toBeNull();
    const second = await run(w, ['run', writeTemplate(w, 'queued', t), '--no-wait']);
    expect(lastJson(second.stdout)).toMatchObject({ kind: 'RunQueued', workers: 1 });
    await until('the second run to complete', async () => (await run(w, ['runs', '--status', 'completed'])).stdout.includes(lastJson(second.stdout).runId));
    worker.child.kill('SIGTERM');
    const stopped = await worker.done;
    expect(stopped.code).toBe(0);
    expect(lastJson(stopped.stdout)).toMatchObject({ kind: 'Stopped', signal: 'SIGTERM', drained: true, started: 2 });
  }, 60_000);

  it('with a worker on the store, an approval of a resting run is applied by the worker and followed by the shell', async () => {
    const w = world();
    const t = template(
      'gated-charge',
      [
        { id: 'gate', uses: 'human.approval@1', config: { prompt: 'charge?' } },
        { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } },
      ],
      [
        ['start', 'gate'],
        ['gate', 'charge'],
        ['charge', 'end'],
      ],
      { requires: ['approval', 'tool:charge'], outputs: { receipt: { source: 'output', nodeId: 'charge' } } },
    );
    const worker = start(w, ['serve']);
    try {
      await until('the worker to serve', () => worker.out().includes('"Serving"'));
      const queued = lastJson((await run(w, ['run', writeTemplate(w, 'gated', t), '--no-wait'])).stdout);
      expect(queued).toMatchObject({ kind: 'RunQueued', workers: 1 });
      await until('the run to pause for the approval', async () => lastJson((await run(w, ['runs'])).stdout).runs[0].status === 'paused');
      // A resume request alone is queued for the worker; it prints what it committed.
      const requested = await run(w, ['resume', queued.runId, '--no-wait']);
      expect(requested.code).toBe(0);
      expect(lastJson(requested.stdout)).toMatchObject({ kind: 'CommandQueued', command: 'resume', workers: 1 });
      const approved = await run(w, ['approve', queued.runId, 'gate', '--by', 'alice']);
      expect(approved.code).toBe(0);
      expect(lastJson(approved.stdout)).toMatchObject({ status: 'completed', output: { receipt: { charged: 1 } }, appliedBy: expect.stringContaining(`/${worker.child.pid}/`) });
      expect(charges(w)).toHaveLength(1);
      expect(charges(w)[0].pid).toBe(worker.child.pid);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
    }
  }, 60_000);
});

describe('a graceful stop that cannot wait', () => {
  it('hands a call still running at the drain deadline back: the next worker surfaces it, nothing is charged twice', async () => {
    const w = world({ CHARGE_MS: '8000' });
    const t = template('slow-pay', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
      ['start', 'charge'],
      ['charge', 'end'],
    ], { requires: ['tool:charge'] });
    const first = start(w, ['serve', '--drain-ms', '300']);
    await until('the worker to serve', () => first.out().includes('"Serving"'));
    const queued = lastJson((await run(w, ['run', writeTemplate(w, 'slow-pay', t), '--no-wait'])).stdout);
    await until('the charge to start', () => charges(w).length > 0);
    first.child.kill('SIGTERM');
    const stopped = await first.done;
    expect(stopped.code).toBe(0);
    expect(lastJson(stopped.stdout)).toMatchObject({ kind: 'Stopped', drained: false });
    // The lease was given back: the next worker takes the run at once and surfaces the call.
    const second = start(w, ['serve']);
    try {
      await until('the run to need attention', async () => lastJson((await run(w, ['runs'])).stdout).runs[0].status === 'paused');
      const events = await trace(w, queued.runId);
      expect(events.some((e) => e.type === 'capability.abandoned')).toBe(true);
      expect(events.find((e) => e.type === 'run.paused')?.payload.reason).toBe('needs_attention');
      expect(charges(w)).toHaveLength(1);
    } finally {
      second.child.kill('SIGTERM');
      await second.done;
    }
  }, 60_000);
});

describe('who may decide', () => {
  it("refuses approve and reject from anyone the node's approvers do not name, and takes the decision of one it names", async () => {
    const w = world();
    const t = template(
      'finance',
      [
        { id: 'gate', uses: 'human.approval@1', config: { prompt: 'pay?', approvers: ['finance-lead'] } },
        { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } },
      ],
      [
        ['start', 'gate'],
        ['gate', 'charge'],
        ['charge', 'end'],
      ],
      { requires: ['approval', 'tool:charge'] },
    );
    const paused = await run(w, ['run', writeTemplate(w, 'finance', t)]);
    expect(paused.code).toBe(4);
    const runId = lastJson(paused.stdout).runId;
    const byIntern = await run(w, ['reject', runId, 'gate', '--by', 'intern']);
    expect(byIntern.code).toBe(10);
    expect(lastJson(byIntern.stdout)).toMatchObject({ kind: 'Error', error: { code: 'approval.not-allowed' } });
    const byAnyone = await run(w, ['approve', runId, 'gate', '--by', 'anyone']);
    expect(byAnyone.code).toBe(10);
    expect(charges(w)).toEqual([]);
    expect(lastJson((await run(w, ['runs'])).stdout).runs[0]).toMatchObject({ runId, status: 'paused' });
    const byLead = await run(w, ['approve', runId, 'gate', '--by', 'finance-lead']);
    expect(byLead.code).toBe(0);
    expect(lastJson(byLead.stdout)).toMatchObject({ status: 'completed' });
    expect(charges(w)).toHaveLength(1);
  }, 60_000);
});
