// Agent turn overhead, with the same fake model (it answers at once) on this product
// (agent.run@1, SQLite store) and on LangGraph's prebuilt ReAct agent with its SQLite
// checkpointer (from bench/peers, when installed), each system in a process of its own, the
// systems taking turns:
//
//   two-turn   N runs of a two-turn agent (one tool call, then the answer)
//   ten-turn   N/5 runs of a ten-turn loop with two tool calls a turn (the answer on turn ten)
//   fifty-turn N/25 runs of a fifty-turn loop with two tool calls a turn: how the cost of a turn
//              grows with the conversation
//
// This product is measured as users open it (safe calls start beside their commit, and outcomes
// that are ready before it is written are folded into it), with `dispatchBeforeCommit: false`
// (every call after its commit, one commit per activation), and with `durability: 'normal'`
// (SQLite synchronous=NORMAL, the setting LangGraph's SqliteSaver runs at). Each system gets
// untimed warm-up runs first (`warmupOf`); the timed runs are interleaved in rounds (`measure`).
// Prints a table; never fails.
//
// Each system runs in a child process of this script (`--system <index> --scenario <index>`),
// as a user runs one of them: no system's garbage is collected, nor its heap walked, in another's
// timed runs. The parent only tells the children when to run and adds up what they measure.
import { fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';

const RUNS = Number(process.env.AGENT_BENCH_RUNS ?? 50);
const usage = { inputTokens: 1, outputTokens: 1 };
const scenarios = [
  { name: 'two-turn, 1 tool call', turns: 2, toolsPerTurn: 1, runs: RUNS },
  { name: 'ten-turn, 2 tool calls a turn', turns: 10, toolsPerTurn: 2, runs: Math.max(1, Math.round(RUNS / 5)) },
  { name: 'fifty-turn, 2 tool calls a turn', turns: 50, toolsPerTurn: 2, runs: Math.max(2, Math.round(RUNS / 25)) },
];

/**
 * Untimed runs before the timed ones, on the same runtime or agent: a quarter, at least 10, and
 * at least 200 turns. The engine's WebAssembly is compiled to its optimized tier in the
 * background, function by function as it is called (on this 2-core machine, beside the runs):
 * ten runs of the ten-turn loop left it a third slower than it runs once warm.
 */
const warmupOf = (s) => Math.max(10, Math.round(s.runs / 4), Math.ceil(200 / s.turns));

/** The tool calls of turn `turn` (none on the last turn: the answer). */
const callsOf = (s, turn) => (turn >= s.turns ? [] : Array.from({ length: s.toolsPerTurn }, (_, i) => ({ id: `c${turn}-${i}`, name: 'lookup', input: { q: `${turn}-${i}` } })));

function templateOf(s) {
  return {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id: `bench-agent-${s.turns}` },
    spec: {
      nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'agent', uses: 'agent.run@1', config: { model: 'fake', tools: ['lookup'], maxTurns: s.turns + 1 } }, { id: 'end', uses: 'core.end@1', inputs: { a: { source: 'output', nodeId: 'agent' } } }],
      edges: [{ from: 'start', to: 'agent' }, { from: 'agent', to: 'end' }],
      requires: ['model:fake', 'tool:lookup'],
    },
  };
}

/** This product, opened as users open it: a runtime whose `batch(from, count)` runs `count` runs. */
async function ours(s, options = {}) {
  const rt = await WorkflowRuntime.open({
    dir: mkdtempSync(join(tmpdir(), 'bench-agent-')),
    log: () => undefined,
    ...options,
    tools: { lookup: { readOnly: true, execute: () => ({ value: 42 }) } },
    models: {
      fake: {
        generate: (r) => {
          const toolCalls = callsOf(s, r.turn);
          return toolCalls.length > 0 ? { toolCalls, usage, finishReason: 'tool-calls' } : { text: 'done', toolCalls: [], usage, finishReason: 'stop' };
        },
      },
    },
  });
  const template = templateOf(s);
  const run = async (i) => {
    const outcome = await (await rt.launch({ type: 'inline', template }, { input: `q${i}` })).settled();
    if (outcome.status !== 'completed') throw new Error(`run ${i} ${outcome.status}`);
  };
  return { run, close: () => rt.close() };
}

async function langgraph(s) {
  const require = createRequire(new URL('../peers/package.json', import.meta.url));
  const { createReactAgent } = await import(require.resolve('@langchain/langgraph/prebuilt'));
  const { SqliteSaver } = await import(require.resolve('@langchain/langgraph-checkpoint-sqlite'));
  const { BaseChatModel } = await import(require.resolve('@langchain/core/language_models/chat_models'));
  const { AIMessage } = await import(require.resolve('@langchain/core/messages'));
  const { tool } = await import(require.resolve('@langchain/core/tools'));
  class FakeModel extends BaseChatModel {
    _llmType() { return 'fake'; }
    bindTools() { return this; }
    async _generate(messages) {
      const turn = messages.filter((m) => m._getType() === 'ai').length + 1;
      const calls = callsOf(s, turn);
      const message = calls.length === 0 ? new AIMessage({ content: 'done' }) : new AIMessage({ content: '', tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.input })) });
      return { generations: [{ text: String(message.content), message }] };
    }
  }
  const lookup = tool(async () => JSON.stringify({ value: 42 }), { name: 'lookup', description: 'lookup', schema: { type: 'object', properties: { q: { type: 'string' } } } });
  const saver = SqliteSaver.fromConnString(join(mkdtempSync(join(tmpdir(), 'bench-lg-')), 'cp.db'));
  const agent = createReactAgent({ llm: new FakeModel({}), tools: [lookup], checkpointSaver: saver });
  const run = async (i) => {
    const result = await agent.invoke({ messages: [{ role: 'user', content: `q${i}` }] }, { configurable: { thread_id: `t${i}` }, recursionLimit: 4 * s.turns + 10 });
    if (result.messages.length !== 1 + s.turns + (s.turns - 1) * s.toolsPerTurn) throw new Error(`run ${i} ended with ${result.messages.length} messages`);
  };
  return { run, close: () => undefined };
}

const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const systems = [
  ['agent-dag-workflow agent.run@1 (SQLite)', (s) => ours(s)],
  ['agent-dag-workflow, dispatchBeforeCommit: false', (s) => ours(s, { dispatchBeforeCommit: false })],
  // LangGraph's SqliteSaver leaves SQLite at synchronous=NORMAL (no fsync at a commit): this row
  // runs this product at the same setting, where the row above fsyncs every commit (FULL).
  ['agent-dag-workflow, durability: normal', (s) => ours(s, { durability: 'normal' })],
  ['LangGraph createReactAgent (SqliteSaver)', langgraph],
];
const flag = (name) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : undefined);

/**
 * A child: opens one system for one scenario, runs its warm-up, then runs what each message asks
 * (`{ count, from }`) and answers the time it took (`{ ms }`), or the error it could not run with.
 */
async function child(systemIndex, scenarioIndex) {
  const s = scenarios[scenarioIndex];
  let system;
  try {
    system = await systems[systemIndex][1](s);
    for (let i = 0; i < warmupOf(s); i++) await system.run(-1 - i);
    process.send({ ready: true });
  } catch (error) {
    process.send({ error: String(error.message).slice(0, 60) }, () => process.disconnect());
    return;
  }
  process.on('message', async ({ count, from, close }) => {
    if (close) {
      await system.close();
      process.disconnect();
      return;
    }
    try {
      const start = performance.now();
      for (let i = 0; i < count; i++) await system.run(from + i);
      process.send({ ms: performance.now() - start });
    } catch (error) {
      process.send({ error: String(error.message).slice(0, 60) });
    }
  });
}

/** A system's child process, with `ask(message)` answering its next reply. */
function spawnSystem(systemIndex, scenarioIndex) {
  const proc = fork(fileURLToPath(import.meta.url), ['--system', String(systemIndex), '--scenario', String(scenarioIndex)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const replies = [];
  let waiting;
  proc.on('message', (m) => (waiting ? (waiting(m), (waiting = undefined)) : replies.push(m)));
  proc.on('exit', (code) => waiting?.({ error: `its process exited with ${code}` }));
  const next = () => (replies.length > 0 ? Promise.resolve(replies.shift()) : new Promise((resolve) => (waiting = resolve)));
  return {
    next,
    ask: (message) => (proc.send(message), next()),
    close: () => new Promise((resolve) => (proc.exitCode !== null ? resolve() : (proc.once('exit', resolve), proc.send({ close: true })))),
  };
}

/**
 * The timed runs of a scenario, interleaved: every system gets its warm-up runs first (in its own
 * process, one system at a time), then the runs go in `rounds` rounds, each system one after the
 * other in every round, so that a machine that slows down or speeds up while the benchmark runs
 * (a shared one does) weighs on every system alike. Returns each system's total time of timed
 * runs, or the error it could not run with.
 */
async function measure(scenarioIndex) {
  const s = scenarios[scenarioIndex];
  const rounds = Math.min(s.runs, 10);
  const entries = [];
  for (let i = 0; i < systems.length; i++) {
    const proc = spawnSystem(i, scenarioIndex);
    const first = await proc.next();
    entries.push({ name: systems[i][0], proc, ms: 0, ...(first.error ? { error: first.error } : {}) });
  }
  let next = 0;
  for (let round = 0; round < rounds; round++) {
    const count = Math.floor(((round + 1) * s.runs) / rounds) - Math.floor((round * s.runs) / rounds);
    for (const e of entries) {
      if (e.error) continue;
      const reply = await e.proc.ask({ count, from: next });
      if (reply.error) e.error = reply.error;
      else e.ms += reply.ms;
    }
    next += count;
  }
  for (const e of entries) await e.proc.close();
  return entries;
}

if (flag('--system') !== undefined) {
  await child(flag('--system'), flag('--scenario'));
} else {
  await main();
}

async function main() {
  console.log(`agent turn overhead, loadavg at start: ${load()}`);
  console.log('| scenario | system | runs | total ms | ms/run | ms/turn | vs LangGraph |\n|---|---|---|---|---|---|---|');
  for (const [index, s] of scenarios.entries()) {
    const rows = await measure(index);
    const peer = rows.find((r) => r.name.startsWith('LangGraph') && !r.error);
    for (const r of rows) {
      if (r.error) {
        console.log(`| ${s.name} | ${r.name} | ${s.runs} | skipped | ${r.error} | | |`);
        continue;
      }
      const perTurn = r.ms / s.runs / s.turns;
      const ratio = peer ? `${(r.ms / peer.ms).toFixed(2)}x` : '';
      console.log(`| ${s.name} | ${r.name} | ${s.runs} | ${r.ms.toFixed(0)} | ${(r.ms / s.runs).toFixed(2)} | ${perTurn.toFixed(2)} | ${ratio} |`);
    }
  }
  console.log(`loadavg at end: ${load()}`);
}
