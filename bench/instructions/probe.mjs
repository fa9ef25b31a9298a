// Runs N 2-step runs through one EngineInstance with an in-memory host and nothing else, so that
// the difference of two instruction counts (see bench/instructions/bench.mjs) is the engine's
// cost per activation, the transpiled bindings included.
//
//   node --single-threaded --hash-seed=1 --random-seed=1 bench/instructions/probe.mjs --runs 20
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { benchEngine, twoStepTemplate } from '../lib/engine.mjs';

setFlagsFromString('--experimental-wasm-extended-const');
const arg = (name, d) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : d);
const runs = arg('--runs', 20);
const warmup = arg('--warmup', 300);
// ENGINE_DIR: another transpiled component directory, to compare two builds of the engine.
const engine = await benchEngine(process.env.ENGINE_DIR ? pathToFileURL(`${process.env.ENGINE_DIR}/`) : undefined);
const template = twoStepTemplate;
const plan = engine.compile({ root: { template } });
let activations = 0;
for (let n = -warmup; n < runs; n++) {
  const runId = `run-${n}`;
  let out = engine.activate({ runId, now: 1_700_000_000_000 + n, facts: [{ type: 'run-requested', input: { n }, authority: { id: 'b', scopes: ['*'] } }], plan });
  if (n >= 0) activations++;
  while (out.requests.length > 0) {
    out = engine.activate({ runId, now: 1_700_000_000_000 + n, facts: out.requests.map((r) => ({ type: 'capability-completed', invocationId: r.invocationId, ok: true, output: { n } })) });
    if (n >= 0) activations++;
  }
  if (out.summary.status !== 'completed') throw new Error(`run ended ${out.summary.status}`);
}
console.log(JSON.stringify({ runs, activations }));
