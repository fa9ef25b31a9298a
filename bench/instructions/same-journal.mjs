// Runs every case of test/cases/ (and the 2-step run and the ten-turn agent of the benchmarks) through two builds of the
// engine bundle and compares, byte for byte, every commit (events and checkpoint), gateway
// request, cancel and summary they produce: hot, and again with the run evicted and rebuilt from
// its journal before every activation. A change meant to make the engine cheaper must leave this
// at `diffs: 0`.
//
//   node build.mjs && cp dist/engine-bundle-quickjs.js /tmp/before.js    # on the old commit
//   node build.mjs && node bench/instructions/same-journal.mjs /tmp/before.js [dist/engine-bundle-quickjs.js]
//
// The bundles run in this process (V8, not the component): the comparison is of what the engine
// decides and writes, which does not depend on the interpreter. Scripts are evaluated by a
// stand-in (node:vm), the same for both builds. Exit code 1 when anything differs.
import { mkdtempSync, readFileSync, readdirSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { twoStepTemplate } from '../lib/templates.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const [bundleA, bundleB = join(root, 'dist/engine-bundle-quickjs.js')] = process.argv.slice(2);
if (!bundleA) {
  console.error('usage: node bench/instructions/same-journal.mjs <engine bundle A> [<engine bundle B>]');
  process.exit(2);
}
const casesDir = join(root, 'test/cases');
const work = mkdtempSync(join(tmpdir(), 'same-journal-'));

/** The bundle as a module that takes its WIT imports from globalThis.__host. */
function loadable(bundle, name) {
  const text = readFileSync(bundle, 'utf8').replace(/import \{([^}]*)\} from "gm-hz:workflow\/(\w+)@1\.0\.0";/g, (_, names, mod) => `const {${names.replace(/ as /g, ': ')}} = globalThis.__host.${mod};`);
  const file = join(work, `${name}.mjs`);
  writeFileSync(file, text);
  return pathToFileURL(file).href;
}

/** What one build produced, in order: plans, commits, requests, cancels, summaries, errors. */
const log = [];
/** The journal of every run, as a host keeps it: what a cold activation loads. */
const journal = new Map();
/** The run being driven: its plan text and the requests staged by its latest activation. */
let current;

globalThis.__host = {
  journal: {
    load(runId) {
      const j = journal.get(runId);
      return j && { plan: j.plan, checkpoint: j.checkpoint, events: j.events.join('\n'), lastSeq: j.lastSeq };
    },
    commit(c) {
      log.push(`commit ${JSON.stringify(c)}`);
      const j = journal.get(c.runId) ?? { plan: current.planText, events: [], lastSeq: 0 };
      journal.set(c.runId, j);
      j.events.push(...c.events.split('\n'));
      j.lastSeq = c.lastSeq;
      if (c.checkpoint) {
        j.checkpoint = c.checkpoint;
        j.events = [];
      }
    },
  },
  gateway: {
    request(json) {
      log.push(`request ${json}`);
      current.requests.push(JSON.parse(json));
    },
    cancel: (invocationId, reason) => log.push(`cancel ${invocationId} ${reason}`),
  },
  sandbox: {
    evaluate(source, inputJson) {
      try {
        const output = vm.runInNewContext(`(function (input) { ${source} })(${inputJson})`, {}, { timeout: 1000 });
        return { output: JSON.stringify(output ?? null), fuelUsed: 7 };
      } catch (err) {
        throw { code: 'script.runtime', message: String(err?.message), line: 1 };
      }
    },
    checkSyntax(source) {
      try {
        new vm.Script(`(function (input) { ${source} })`);
        return undefined;
      } catch (err) {
        return { code: 'script.syntax', message: err.message, line: 1 };
      }
    },
  },
  log: { write: () => undefined },
  digest: { sha256: (text) => createHash('sha256').update(text).digest('hex') },
};

const twoStep = twoStepTemplate;

/** The agent benchmark's ten-turn loop (bench/agents/agent-turns.mjs): two tool calls a turn, the answer on turn ten. */
const tenTurns = {
  template: {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id: 'agent-ten-turns' },
    spec: {
      nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'agent', uses: 'agent.run@1', config: { model: 'fake', tools: ['lookup'], maxTurns: 11 } }, { id: 'end', uses: 'core.end@1', inputs: { a: { source: 'output', nodeId: 'agent' } } }],
      edges: [{ from: 'start', to: 'agent' }, { from: 'agent', to: 'end' }],
      requires: ['model:fake', 'tool:lookup'],
    },
  },
  input: 'q',
  host: {
    tools: { lookup: { readOnly: true, execute: () => ({ value: 42 }) } },
    models: {
      fake: {
        generate: ({ turn }) =>
          turn >= 10
            ? { text: 'done', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'stop' }
            : { toolCalls: [0, 1].map((i) => ({ id: `c${turn}-${i}`, name: 'lookup', input: { q: `${turn}-${i}` } })), usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'tool-calls' },
      },
    },
  },
};

async function loadCase(name) {
  if (name === 'two-step') return { template: twoStep, input: { n: 1 }, host: { tools: { noop: () => ({ ok: 1 }) } } };
  if (name === 'agent-ten-turns') return tenTurns;
  const read = (file) => JSON.parse(readFileSync(join(casesDir, name, file), 'utf8'));
  return { template: read('template.json'), input: read('input.json'), host: (await import(pathToFileURL(join(casesDir, name, 'host.mjs')).href)).default };
}

/**
 * A model turn answered by the case's model, as the Node host's model gateway hands it over: the
 * tools by name, each tool call with the effect class of the tool's definition.
 */
function modelTurn(c, r) {
  const out = c.host.models[r.name].generate({ ...r.input, tools: r.input.tools.map((name) => ({ name, description: c.host.tools?.[name]?.description })) });
  const effectOf = (name) => (c.host.tools?.[name]?.readOnly ? 'read-only' : c.host.tools?.[name]?.idempotent ? 'idempotent' : 'unknown');
  return { ...out, toolCalls: (out.toolCalls ?? []).map((call) => ({ ...call, effect: effectOf(call.name) })) };
}

/** The outcomes of the calls an activation requested, as the case's recorded host answers them. */
function answer(c, requests) {
  const facts = [];
  for (const r of requests) {
    try {
      let output;
      const tool = c.host.tools?.[r.name];
      if (r.kind === 'tool') output = typeof tool === 'function' ? tool(r.input, { attempt: r.attempt }) : tool.execute(r.input, { attempt: r.attempt });
      else if (r.kind === 'agent') output = c.host.agents[r.name](r.input);
      else if (r.kind === 'model') output = modelTurn(c, r);
      else if (r.kind === 'approval' && c.host.approvals) output = c.host.approvals(r);
      else continue;
      facts.push({ type: 'capability-completed', invocationId: r.invocationId, ok: true, output });
    } catch (err) {
      facts.push({ type: 'capability-completed', invocationId: r.invocationId, ok: false, error: { code: err.code, message: err.message, retryable: err.retryable } });
    }
  }
  return facts;
}

function activate(engine, request) {
  try {
    const out = engine.activate(JSON.stringify(request));
    log.push(`summary ${out}`);
    return JSON.parse(out);
  } catch (err) {
    log.push(`error ${JSON.stringify(err)}`);
    return undefined;
  }
}

async function runAll(bundle) {
  log.length = 0;
  journal.clear();
  const { engine } = await import(bundle);
  const names = [...readdirSync(casesDir).filter((n) => existsSync(join(casesDir, n, 'template.json'))), 'two-step', 'agent-ten-turns'];
  for (const mode of ['hot', 'cold']) {
    for (const name of names) {
      const c = await loadCase(name);
      const planText = engine.compile(JSON.stringify({ root: { template: c.template }, dependencies: c.host.dependencies ?? [] }));
      log.push(`plan ${planText}`);
      const plan = JSON.parse(planText);
      // Twice: with the plan itself and without correlation, then by plan hash with correlation.
      for (const again of [false, true]) {
        const runId = `${name}-${mode}-${again ? 2 : 1}`;
        current = { requests: [], planText };
        let now = 1_700_000_000_000;
        const fact = { type: 'run-requested', input: c.input, authority: { id: 'tester', scopes: ['*'] }, ...(again ? { correlation: { again } } : {}) };
        let summary = activate(engine, { runId, now, facts: [fact], ...(again ? { planHash: plan.planHash } : { plan }) });
        for (let step = 0; summary && step < 60; step++) {
          const facts = answer(c, current.requests.splice(0));
          now += 1000 + step;
          if (facts.length === 0 && summary.wakeAt === undefined) break;
          if (mode === 'cold') engine.evict(runId);
          summary = activate(engine, { runId, now: summary.wakeAt ?? now, facts });
        }
        // A duplicate outcome and a cancel after the run came to rest.
        activate(engine, { runId, now: now + 5, facts: [{ type: 'capability-completed', invocationId: 'iv-unknown', ok: true, output: 1 }, { type: 'cancel-requested', reason: 'done' }] });
      }
    }
  }
  return log.slice();
}

const a = await runAll(loadable(bundleA, 'a'));
const b = await runAll(loadable(bundleB, 'b'));
let diffs = 0;
for (let i = 0; i < Math.max(a.length, b.length); i++) {
  if (a[i] === b[i]) continue;
  if (diffs++ < 3) console.log(`differs at entry ${i}\nA: ${a[i]?.slice(0, 600)}\nB: ${b[i]?.slice(0, 600)}`);
}
console.log(JSON.stringify({ entries: a.length, commits: a.filter((x) => x.startsWith('commit ')).length, characters: a.join('').length, diffs }));
process.exit(diffs > 0 ? 1 : 0);
