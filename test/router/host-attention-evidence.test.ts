// needs_attention evidence says what the receipts show: a tool that was only claimed (no start
// recorded: a crash between the fork and the start receipt leaves this) or one that was started
// (its pid, when) and ended without a completion. Real router processes: the first is SIGKILLed
// while two non-idempotent tools run; the restarted one marks their nodes needs_attention, and an
// operator resolves one through the control socket.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { fileLines, tempDir, until, operatorCli, alive, memoryFlags } from './helpers.js';

const { FileJournalStore, ReceiptLog } = await import('../../dist/hosts/router/index.js');

const root = fileURLToPath(new URL('../../', import.meta.url));
const mainJs = path.join(root, 'dist/hosts/node/cli/main.js');


const routers: ChildProcess[] = [];
afterEach(() => {
  for (const child of routers.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});


describe('router host: needs_attention evidence from the receipts', () => {
  it('says whether the tool was only claimed or actually started', async () => {
    const work = tempDir('router-evidence-');
    const dir = path.join(work, 'state');
    const side = path.join(work, 'started.txt');
    const script = path.join(work, 'step.sh');
    fs.writeFileSync(script, `printf '%s %s\\n' "$AGENT_WORKFLOW_INVOCATION_ID" "$$" >> "$SIDE_FILE"\nsleep 30\nprintf '{"n":1}'\n`);
    const step = { executable: '/bin/sh', args: [script], timeoutMs: 60_000, idempotent: false, env: { SIDE_FILE: side, PATH: '/usr/bin:/bin' } };
    const config = path.join(work, 'host.mjs');
    fs.writeFileSync(config, `export default { tools: { step: ${JSON.stringify(step)} } };\n`);
    const template = path.join(work, 'one.json');
    fs.writeFileSync(
      template,
      JSON.stringify({
        apiVersion: 'workflow.gm-hz.dev/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { id: 'evidence' },
        spec: {
          requires: ['tool:step'],
          nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool: 'step' } }, { id: 'end', uses: 'core.end@1' }],
          edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }],
          outputs: { a: { source: 'output', nodeId: 'a' } },
        },
      }),
    );
    const manifest = path.join(work, 'runs.json');
    fs.writeFileSync(manifest, JSON.stringify([{ template, count: 3 }]));
    // Edge profile: two attempts at once; the third request waits in the gateway without a claim.
    const first = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'edge', '--config', config, '--runs', manifest, '--cadence-ms', '5'], { cwd: root, stdio: 'ignore' });
    routers.push(first);
    await until(() => fileLines(side).length === 2);
    await new Promise((r) => setTimeout(r, 300)); // the start receipts are durable
    first.kill('SIGKILL');
    await new Promise((r) => first.on('exit', r));
    const started = new Map(fileLines(side).map((l) => l.split(' ') as [string, string]));

    // The third call: a claim without a start, as a crash between the fork and the start receipt leaves it.
    const store = FileJournalStore.open(dir);
    const calls = store.listRuns().flatMap((r: any) => (r.outcome?.calls ?? []).map((c: any) => ({ ...c, runId: r.runId, lastSeq: r.lastSeq })));
    store.close();
    expect(calls).toHaveLength(3);
    const unclaimed = calls.find((c: any) => !started.has(c.invocationId));
    const receipts = ReceiptLog.open(dir);
    receipts.claim(unclaimed.invocationId, 'step', false, { runId: unclaimed.runId, journalSeq: unclaimed.lastSeq });
    receipts.close();

    const second = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'edge', '--config', config, '--cadence-ms', '5'], { cwd: root, stdio: 'ignore' });
    routers.push(second);
    await until(() => fs.existsSync(path.join(dir, 'control.sock')));
    let runs: any[] = [];
    for (let i = 0; i < 100; i++) {
      runs = (await operatorCli(['router', 'list', '--dir', dir])).lines[0]?.runs ?? [];
      if (runs.length === 3 && runs.every((r) => r.status === 'paused')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(runs.map((r) => [r.status, r.pausedReason, r.attention])).toEqual(Array.from({ length: 3 }, () => ['paused', 'needs_attention', [{ nodeId: 'a', seq: 10 }]]));
    // Nothing ran again, and the processes the first router left were stopped.
    expect(fileLines(side)).toHaveLength(2);
    for (const pid of started.values()) expect(alive(Number(pid))).toBe(false);

    const evidence = new Map<string, any>();
    for (const run of runs) {
      const events = (await operatorCli(['router', 'trace', '--dir', dir, run.runId])).lines;
      const attention = events.find((e) => e.type === 'node.needs-attention');
      evidence.set(attention.payload.invocationId, attention.payload.evidence);
    }
    for (const [invocationId, pid] of started) {
      expect(evidence.get(invocationId)).toMatchObject({ kind: 'tool', name: 'step', effect: 'unknown', attempt: { stage: 'started', pid: Number(pid) } });
      expect(evidence.get(invocationId).attempt.startedAt).toBeGreaterThanOrEqual(evidence.get(invocationId).attempt.claimedAt);
      expect(evidence.get(invocationId).attempt.detail).toContain('stopped by recovery');
    }
    expect(evidence.get(unclaimed.invocationId)).toMatchObject({ kind: 'tool', name: 'step', attempt: { stage: 'claimed' } });
    expect(evidence.get(unclaimed.invocationId).attempt.pid).toBeUndefined();

    // The operator settles one from what the evidence says.
    const resolved = await operatorCli(['router', 'resolve', '--dir', dir, unclaimed.runId, 'a', '--by', 'ops', '--succeeded', '{"n":7}']);
    expect(resolved.code).toBe(0);
    expect(resolved.lines[0]).toMatchObject({ kind: 'RunResult', runId: unclaimed.runId, status: 'completed' });
    expect((await operatorCli(['router', 'get', '--dir', dir, unclaimed.runId])).lines[0].run).toMatchObject({ status: 'completed', output: { a: { n: 7 } } });
    second.kill('SIGTERM');
    await new Promise((r) => second.on('exit', r));
  }, 60_000);
});
