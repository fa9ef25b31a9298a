// The journal, gateway and digest imports hand the transpiled bindings a canonical-ABI lowering of their
// own (`Symbol.for('cabiLower')`, jco's `--import-bindings hybrid`), which skips the bindings'
// task machinery on every call. The bindings must really take it, and what the host receives
// through it must be exactly what the generic path gives: the same commits byte for byte, the
// same requests and cancels, the same tails handed back to a cold activation, the same errors.
import { describe, expect, it } from 'vitest';
import { EngineCallError, EngineInstance, type ComponentLoader } from '../../dist/hosts/core/engine-instance.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { memoryJournal } from '../helpers/memory-journal.js';
import { chain, planWithoutFlags, scriptlessEngine } from '../helpers/node-host.js';

const cabiLower = Symbol.for('cabiLower');
const decoder = new TextDecoder();

/** The Node loader, noting which imports the bindings asked for a lowering; `generic` hides them. */
function loader(asked: string[], generic: boolean): ComponentLoader {
  const base = nodeComponentLoader();
  return {
    getCoreModule: (p) => base.getCoreModule(p),
    instantiate: (getCoreModule, imports) => {
      for (const [iface, fns] of Object.entries(imports as Record<string, Record<string, any>>)) {
        for (const [name, fn] of Object.entries(fns)) {
          if (typeof fn !== 'function' || !fn[cabiLower]) continue;
          if (generic) {
            delete fn[cabiLower];
            continue;
          }
          const lower = fn[cabiLower];
          fn[cabiLower] = (args: unknown) => {
            asked.push(`${iface}#${name}`);
            return lower(args);
          };
        }
      }
      return base.instantiate(getCoreModule, imports);
    },
  };
}

/** One scenario: a run to its end (cold between activations), a cancelled run, a failing load. */
async function scenario(generic: boolean) {
  const asked: string[] = [];
  const journal = memoryJournal();
  const engine = await scriptlessEngine({ loader: loader(asked, generic), load: (runId) => journal.load(runId) });
  const template = chain(
    'raw',
    [
      { id: 'a', uses: 'tool.call@1', config: { tool: 'echo' }, inputs: { text: { source: 'input', path: '/text' } } },
      { id: 'b', uses: 'tool.call@1', config: { tool: 'echo' }, inputs: { previous: { source: 'output', nodeId: 'a', path: '' } } },
    ],
    { requires: ['tool:echo'] },
  );
  // Without `checkpoint-v3`, so that the run to its end takes a checkpoint: the commit's checkpoint
  // and the one a cold activation's tail hands back go through the lowerings too.
  const plan = planWithoutFlags(engine.compile({ root: { template } }), ['checkpoint-v3']);
  const record: string[] = [];
  // The plan's hashes are the digest import's answers (SHA-256 of its canonical text), here of text beyond ASCII.
  const described = engine.compile({ root: { template: { ...template, metadata: { id: 'raw', description: 'ünïcödé ✓ \u2028 𝄞' } } } });
  record.push(`plans ${plan.planHash} ${described.planHash} ${JSON.stringify(described.templates)}`);
  const note = (out: ReturnType<EngineInstance['activate']>) => {
    journal.apply(out.commits);
    for (const c of out.commits) {
      record.push(`commit ${c.runId} ${c.expectedSeq}..${c.lastSeq} ${c.status} plan=${c.plan ? decoder.decode(c.plan).length : '-'}`);
      record.push(decoder.decode(c.events));
      if (c.checkpoint) record.push(`checkpoint ${decoder.decode(c.checkpoint)}`);
    }
    for (const r of out.requests) record.push(`request ${JSON.stringify(r)}`);
    for (const c of out.cancels) record.push(`cancel ${c.invocationId} ${c.reason}`);
    record.push(`summary ${JSON.stringify(out.summary)}`);
    return out;
  };
  const authority = { id: 'tester', scopes: ['*'] };
  const input = { text: 'ünïcödé ✓ and a \u2028 line separator' };
  let out = note(engine.activate({ runId: 'run-raw', now: 1_700_000_000_000, facts: [{ type: 'run-requested', input, authority }], plan }));
  for (let i = 1; out.requests.length > 0; i++) {
    // Cold: the next activation rebuilds the run from the tail the journal import hands over.
    engine.evict('run-raw');
    const facts = out.requests.map((r) => ({ type: 'capability-completed', invocationId: r.invocationId, ok: true, output: { echoed: r.input, i } }));
    out = note(engine.activate({ runId: 'run-raw', now: 1_700_000_000_000 + i, facts }));
  }
  // Late evidence for the ended run: a cold activation from its checkpoint.
  engine.evict('run-raw');
  out = note(engine.activate({ runId: 'run-raw', now: 1_700_000_000_900, facts: [{ type: 'capability-completed', invocationId: 'iv-late', ok: true, output: { late: 'ünïcödé' } }] }));
  out = note(engine.activate({ runId: 'run-cancel', now: 1_700_000_001_000, facts: [{ type: 'run-requested', input, authority }], plan }));
  out = note(engine.activate({ runId: 'run-cancel', now: 1_700_000_001_001, facts: [{ type: 'cancel-requested', reason: 'not needed', by: 'operator:ann' }] }));
  journal.failing = true;
  engine.evict('run-cancel');
  let loadError: unknown;
  try {
    engine.activate({ runId: 'run-cancel', now: 1_700_000_001_002, facts: [] });
  } catch (err) {
    loadError = err;
  }
  return { asked, record, loadError, dead: engine.dead };
}

describe('raw lowerings of the journal, gateway and digest imports', () => {
  it('are what the bindings call, for load, commit, request, cancel and sha256', async () => {
    const { asked } = await scenario(false);
    expect(asked.sort()).toEqual(['gm-hz:workflow/digest#sha256', 'gm-hz:workflow/gateway#cancel', 'gm-hz:workflow/gateway#request', 'gm-hz:workflow/journal#commit', 'gm-hz:workflow/journal#load']);
  });

  it('hand the host and the engine exactly what the generic path does', async () => {
    const raw = await scenario(false);
    const generic = await scenario(true);
    expect(generic.asked).toEqual([]);
    expect(raw.record).toEqual(generic.record);
    // The scenario went through every shape the lowerings read and write.
    const text = raw.record.join('\n');
    expect(text).toContain('"type":"run.completed"');
    expect(text).toContain('checkpoint {');
    expect(text).toContain('"type":"capability.late"');
    expect(text).toContain('ünïcödé ✓');
    expect(raw.record.some((l) => l.startsWith('cancel '))).toBe(true);
    expect(raw.record.filter((l) => l.startsWith('request ')).length).toBeGreaterThanOrEqual(3);
    // A store error comes back through the result's error case, a typed error and no trap.
    expect(raw.loadError).toBeInstanceOf(EngineCallError);
    expect(raw.loadError).toMatchObject({ code: 'store.io', message: expect.stringContaining('disk on fire') });
    expect((generic.loadError as EngineCallError).message).toBe((raw.loadError as EngineCallError).message);
    expect(raw.dead).toBe(false);
  });
});
