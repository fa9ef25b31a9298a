// `trace --follow` in its own process on a run that pauses for approval: another CLI process
// approves it, and the trace prints the approval and the end, then exits as `run` would.
import { describe, expect, it } from 'vitest';
import { gatedTemplate, jsonLines, liveWorld, runCli, startCli, until, writeTemplate } from './helpers.js';

const gated = gatedTemplate('gated');

describe('trace --follow', () => {
  it('prints the approval from another process and the end, and exits with the completed code', async () => {
    const w = liveWorld();
    const launched = await runCli(w, ['run', writeTemplate(w, 'gated', gated)]);
    expect(launched.code).toBe(4);
    const runId = jsonLines(launched.stdout).at(-1).runId as string;

    const follow = startCli(w, ['trace', runId, '--follow']);
    await until('the trace to print the pause', () => follow.out().includes('"run.paused"'));
    const approved = await runCli(w, ['approve', runId, 'gate', '--by', 'alice']);
    expect(approved.code).toBe(0);
    const done = await follow.done;

    expect(done.code).toBe(0);
    const events = jsonLines(done.stdout);
    // Every event once, in order, ending with the terminal commit.
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const resolved = events.find((e) => e.type === 'node.output-committed' && e.node.id === 'gate');
    expect(resolved.payload.output).toMatchObject({ approved: true, by: 'alice' });
    expect(events.filter((e) => e.type === 'run.completed')).toHaveLength(1);
    // The same journal as a plain trace after the fact.
    const after = await runCli(w, ['trace', runId]);
    expect(jsonLines(after.stdout)).toEqual(events);
  }, 60_000);

  it('exits with the cancelled code when another process cancels the run, and refuses --format json', async () => {
    const w = liveWorld();
    const launched = await runCli(w, ['run', writeTemplate(w, 'gated', gated)]);
    const runId = jsonLines(launched.stdout).at(-1).runId as string;
    const follow = startCli(w, ['trace', runId, '--follow', '--format', 'text']);
    await until('the trace to print the pause', () => follow.out().includes('run.paused'));
    expect((await runCli(w, ['cancel', runId])).code).toBe(0);
    const done = await follow.done;
    expect(done.code).toBe(5);
    expect(done.stdout).toMatch(/run\.cancelled/);
    expect((await runCli(w, ['trace', runId, '--follow', '--format', 'json'])).code).toBe(2);
  }, 60_000);
});
