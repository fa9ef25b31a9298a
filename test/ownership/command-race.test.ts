// An operator command posted from one runtime while another runtime owns the run. The owner marks
// a command applied in the same transaction as the commit it led to, so a run the command itself
// ended is reported as the command's outcome, never as "run.terminal". The interleavings are
// forced, not waited for: the follower's read of its command's state is held back until the owner
// has applied it (and the owner reads its inbox only after that first read): the order in which a
// busy machine runs the two processes now and then.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { tempDir } from '../helpers/node-host.js';
import { template, until } from './helpers.js';

const opened: WorkflowRuntime[] = [];

afterEach(async () => {
  for (const rt of opened.splice(0)) await rt.close();
});

async function open(dir: string, ownerId: string, tools: Record<string, unknown> = {}): Promise<WorkflowRuntime> {
  const rt = await WorkflowRuntime.open({ dir, ownerId, pollMs: 10, log: () => undefined, tools: tools as never });
  opened.push(rt);
  return rt;
}

const oneCharge = template('race-charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], [
  ['start', 'charge'],
  ['charge', 'end'],
], { requires: ['tool:charge'] });

/** A charge that lasts until it is aborted; its log (outside the store) is the oracle. */
function abortableCharge(log: string) {
  return (_input: unknown, ctx: { signal: AbortSignal }) => {
    appendFileSync(log, 'charge started\n');
    return new Promise((resolve) => ctx.signal.addEventListener('abort', () => {
      appendFileSync(log, 'charge aborted\n');
      resolve({ charged: 0 });
    }));
  };
}

describe('a command applied by the run\'s owner', () => {
  it('a cancel the owner applies between the follower\'s two looks is reported as the cancel\'s outcome', async () => {
    const dir = tempDir();
    const log = join(dir, 'charges.log');
    writeFileSync(log, '');
    const owner = await open(dir, 'owner-a', { charge: abortableCharge(log) });
    const follower = await open(dir, 'follower-b');
    const handle = await owner.launch(oneCharge);
    await until('the charge to start', () => readFileSync(log, 'utf8').includes('charge started'));

    // The order is forced: the owner reads no command from its inbox until the follower has read
    // its command's state (pending), and that read is answered only after the owner applied it, so
    // the follower's next look at the run finds it terminal.
    let followerRead = false;
    const ownerInbox = (owner as unknown as { store: { ownership: { pendingCommands(...args: unknown[]): unknown } } }).store.ownership;
    const pending = ownerInbox.pendingCommands.bind(ownerInbox);
    ownerInbox.pendingCommands = (...args: unknown[]) => (followerRead ? pending(...args) : []);
    const ownership = (follower as unknown as { store: { ownership: { commandResult(id: number): unknown } } }).store.ownership;
    const read = ownership.commandResult.bind(ownership);
    let held = 0;
    ownership.commandResult = async (id: number) => {
      const state = await read(id);
      if (held++ === 0) {
        expect(state).toMatchObject({ state: 'pending' });
        followerRead = true;
        await until('the owner to apply the cancel', async () => (await follower.getRun(handle.runId)).status === 'cancelled');
      }
      return state;
    };

    const outcome = await follower.cancel(handle.runId, { reason: 'customer asked', by: 'operator' });
    expect(held).toBeGreaterThan(1);
    expect(outcome).toMatchObject({ runId: handle.runId, status: 'cancelled', appliedBy: 'owner-a' });
    await until('the charge to see the abort', () => readFileSync(log, 'utf8').includes('charge aborted'));
    const events = (await follower.readEvents(handle.runId)).events;
    expect(events.filter((e) => e.type === 'run.cancelled')).toHaveLength(1);
    expect(events.find((e) => e.type === 'run.cancel-requested')).toMatchObject({ payload: { reason: 'customer asked', by: 'operator' } });
  }, 30_000);

  it('a command on a run that had ended is refused at once with run.terminal, also with workers on the store', async () => {
    const dir = tempDir();
    const owner = await open(dir, 'owner-a', { charge: () => ({ charged: 1 }) });
    const handle = await owner.launch(oneCharge);
    expect((await handle.result).status).toBe('completed');

    const follower = await open(dir, 'follower-b');
    const direct = await follower.command(handle.runId, { type: 'cancel', reason: 'late', by: 'operator' }, { timeoutMs: 20_000 }).then(() => undefined, (e: { code?: string; message?: string; detail?: { commandId?: number } }) => e);
    expect(direct).toMatchObject({ code: 'run.terminal', detail: { commandId: expect.any(Number) } });
    expect(direct?.message).toBe(`run ${handle.runId} is completed; it had ended when the command was posted`);

    // With a live worker the follower does not take leases itself; it must still see the end.
    const worker = await open(dir, 'worker-c');
    await worker.startWorker({ idlePollMs: 600_000 });
    await until('the worker to be live', async () => (await follower.liveWorkers()).length > 0);
    const withWorkers = await follower.command(handle.runId, { type: 'cancel', reason: 'late', by: 'operator' }, { timeoutMs: 20_000 }).then(() => undefined, (e: { code?: string }) => e);
    expect(withWorkers).toMatchObject({ code: 'run.terminal' });
    // The SDK's cancel of such a run answers with its outcome, as for any run that has ended.
    expect(await follower.cancel(handle.runId)).toMatchObject({ status: 'completed' });
    // A command only posted (not followed) reads as refused, never as pending for good.
    const posted = await follower.post(handle.runId, { type: 'cancel', reason: 'late', by: 'operator' });
    expect(await follower.commandResult(posted)).toMatchObject({ id: posted, runId: handle.runId, state: 'refused', error: { code: 'run.terminal' } });
  }, 60_000);

  it('a command still pending when its run ended is refused with run.terminal, in the store too', async () => {
    const dir = tempDir();
    let finish!: () => void;
    const charged = new Promise<void>((resolve) => (finish = resolve));
    const owner = await open(dir, 'owner-a', { charge: () => charged.then(() => ({ charged: 1 })) });
    const handle = await owner.launch(oneCharge);
    // The owner reads no command from its inbox: the run ends on its own with the command pending.
    const ownerInbox = (owner as unknown as { store: { ownership: { pendingCommands(...args: unknown[]): unknown } } }).store.ownership;
    ownerInbox.pendingCommands = () => [];
    const follower = await open(dir, 'follower-b');
    const posted = await follower.post(handle.runId, { type: 'cancel', reason: 'too late', by: 'operator' });
    const raw = (follower as unknown as { store: { ownership: { commandResult(id: number): Promise<unknown> } } }).store.ownership;
    expect(await raw.commandResult(posted)).toMatchObject({ state: 'pending' });
    expect(await follower.commandResult(posted)).toMatchObject({ state: 'pending' });
    finish();
    expect((await handle.result).status).toBe('completed');

    const refused = { id: posted, runId: handle.runId, state: 'refused', appliedBy: 'follower-b', error: { code: 'run.terminal', message: `run ${handle.runId} is completed; it ended before command ${posted} was applied` } };
    expect(await follower.commandResult(posted)).toMatchObject(refused);
    // The answer was stored: a process that reads the inbox row itself sees the same.
    expect(await raw.commandResult(posted)).toMatchObject(refused);
    const events = (await follower.readEvents(handle.runId)).events;
    expect(events.some((e) => e.type === 'run.cancel-requested')).toBe(false);
  }, 30_000);
});
