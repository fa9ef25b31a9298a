// Host module of the fault campaign (bench/campaign/campaign.mjs). Every tool appends one line per
// execution to ORACLE_LOG, a file outside the store: the oracle the campaign checks the journal
// against. `charge` is not idempotent (its effect is the `done` line); `notify` is idempotent;
// approvals are decided in process by a bot, so a run needs no person.
import { appendFileSync } from 'node:fs';

const log = (entry) => appendFileSync(process.env.ORACLE_LOG, `${JSON.stringify({ ...entry, pid: process.pid, at: Date.now() })}\n`);

function hold(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function tool(name, ms) {
  return async (input, ctx) => {
    const who = { tool: name, runId: ctx.runId, nodeId: ctx.nodeId, attempt: ctx.attempt, invocationId: ctx.invocationId };
    log({ ...who, phase: 'start' });
    await hold(ms(), ctx.signal);
    // The effect happens here, at the end, unless the call was aborted first.
    log({ ...who, phase: ctx.signal?.aborted ? 'aborted' : 'done' });
    return { [name]: true, invocationId: ctx.invocationId };
  };
}

const chargeMs = Number(process.env.CHARGE_MS ?? 400);
const notifyMs = Number(process.env.NOTIFY_MS ?? 100);

export default {
  dir: process.env.STATE_DIR,
  leaseTtlMs: Number(process.env.LEASE_TTL_MS ?? 15_000),
  tools: {
    charge: tool('charge', () => Math.round(chargeMs * (0.5 + Math.random()))),
    notify: { idempotent: true, execute: tool('notify', () => Math.round(notifyMs * (0.5 + Math.random()))) },
  },
  approvals: async (request) => {
    log({ tool: 'approval', runId: request.runId, nodeId: request.nodeId, invocationId: request.invocationId, phase: 'done' });
    return { approved: true, by: 'campaign-bot' };
  },
};
