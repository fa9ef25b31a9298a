// Late receipts keep their content: a local tool whose run is cancelled while it runs gets an exact
// stop; what its process really did is journaled as `capability.late` evidence — the output of a
// tool that still finished its work, or how a stopped process ended — never a bare
// `capability.cancelled` that says nothing ran. Real router process, operator verbs over the
// control socket.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { fileLines, tempDir, until, operatorCli, memoryFlags } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const mainJs = path.join(root, 'dist/hosts/node/cli/main.js');


const routers: ChildProcess[] = [];
afterEach(() => {
  for (const child of routers.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

const oneTool = (tool: string) => ({
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: `late-${tool}` },
  spec: {
    requires: [`tool:${tool}`],
    nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool } }, { id: 'end', uses: 'core.end@1' }],
    edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }],
  },
});

describe('router host: late receipts keep their content', () => {
  it('journals the real output of a tool that finished after the cancel, and how a stopped one ended', async () => {
    const work = tempDir('router-late-');
    const dir = path.join(work, 'state');
    const side = path.join(work, 'started.txt');
    // `finisher` completes its work when asked to stop; `stubborn` ignores SIGTERM and is killed.
    const finisher = path.join(work, 'finisher.sh');
    fs.writeFileSync(finisher, `trap 'printf "{\\"finished\\":true,\\"id\\":\\"%s\\"}" "$AGENT_WORKFLOW_INVOCATION_ID"; exit 0' TERM\necho finisher >> "$SIDE_FILE"\nsleep 30 &\nwait\n`);
    const stubborn = path.join(work, 'stubborn.sh');
    fs.writeFileSync(stubborn, `trap '' TERM\necho stubborn >> "$SIDE_FILE"\nsleep 30\n`);
    const env = { SIDE_FILE: side, PATH: '/usr/bin:/bin' };
    const tools = {
      finisher: { executable: '/bin/sh', args: [finisher], timeoutMs: 60_000, env },
      stubborn: { executable: '/bin/sh', args: [stubborn], timeoutMs: 60_000, env },
    };
    const config = path.join(work, 'host.mjs');
    fs.writeFileSync(config, `export default { stopGraceMs: 500, tools: ${JSON.stringify(tools)} };\n`);
    const router = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'edge', '--config', config, '--cadence-ms', '5'], { cwd: root, stdio: 'ignore' });
    routers.push(router);
    await until(() => fs.existsSync(path.join(dir, 'control.sock')));

    const runIds: Record<string, string> = {};
    for (const tool of ['finisher', 'stubborn']) {
      fs.writeFileSync(path.join(work, `${tool}.json`), JSON.stringify(oneTool(tool)));
      const submitted = await operatorCli(['router', 'submit', '--dir', dir, path.join(work, `${tool}.json`)]);
      expect(submitted.code).toBe(0);
      runIds[tool] = submitted.lines[0].runId;
    }
    await until(() => fileLines(side).length === 2);
    for (const tool of ['finisher', 'stubborn']) {
      const cancelled = await operatorCli(['router', 'cancel', '--dir', dir, runIds[tool]!]);
      expect(cancelled.lines[0].status).toBe('cancelled');
    }

    const lateOf = async (runId: string) => (await operatorCli(['router', 'trace', '--dir', dir, runId])).lines.find((e) => e.type === 'capability.late');
    let finished: any;
    let stopped: any;
    for (let i = 0; i < 60 && !(finished && stopped); i++) {
      finished ??= await lateOf(runIds.finisher!);
      stopped ??= await lateOf(runIds.stubborn!);
      if (!(finished && stopped)) await new Promise((r) => setTimeout(r, 50));
    }
    expect(finished?.payload).toMatchObject({ ok: true, reason: 'run cancelled', output: { finished: true, id: finished?.payload.invocationId } });
    expect(stopped?.payload).toMatchObject({ ok: false, reason: 'run cancelled', error: { code: 'tool.stopped' } });
    expect(stopped.payload.error.message).toContain('signal SIGKILL');
    // The runs stay cancelled: evidence never wakes a run.
    const listed = (await operatorCli(['router', 'list', '--dir', dir])).lines[0].runs;
    expect(listed.map((r: any) => r.status)).toEqual(['cancelled', 'cancelled']);
    router.kill('SIGTERM');
    await new Promise((r) => router.on('exit', r));
  }, 60_000);
});
