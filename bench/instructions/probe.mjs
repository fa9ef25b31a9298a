// Runs N 2-step runs through one EngineInstance with an in-memory host and nothing else, so that
// the difference of two instruction counts (see bench/instructions/bench.mjs) is the engine's
// cost per activation, the transpiled bindings included.
//
//   node --single-threaded --hash-seed=1 --random-seed=1 bench/instructions/probe.mjs --runs 20
import { readFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--experimental-wasm-extended-const');
const root = new URL('../../', import.meta.url);
const arg = (name, d) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : d);
const runs = arg('--runs', 20);
const warmup = arg('--warmup', 300);
const dir = process.env.ENGINE_DIR ? new URL('file://' + process.env.ENGINE_DIR + '/') : new URL('dist/component/', root);
const { EngineInstance } = await import(new URL('dist/hosts/core/engine-instance.js', root).href);
const loader = {
  instantiate: async (getCoreModule, imports) => (await import(new URL('engine.js', dir).href)).instantiate(getCoreModule, imports),
  getCoreModule: async (p) => WebAssembly.compile(await readFile(new URL(p, dir))),
};
const engine = await EngineInstance.create(loader, {
  load: () => undefined,
  evaluateScript: () => ({ ok: false, error: { code: 'script.unavailable', message: 'not measured' } }),
  checkScriptSyntax: () => undefined,
  log: () => undefined,
});
const nodes = [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool: 'noop' } }, { id: 'b', uses: 'tool.call@1', config: { tool: 'noop' } }, { id: 'end', uses: 'core.end@1' }];
const template = { apiVersion: 'workflow.gm-hz.dev/v1alpha1', kind: 'WorkflowTemplate', metadata: { id: 'two' }, spec: { requires: ['tool:noop'], nodes, edges: nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id })) } };
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
