// The DSH adapter (`@gm-hz/agent-dag-workflow/dsh`): a host context built as design §10.1 describes
// it — tools behind the host's policy pipeline, subagents, skill visibility, an approval channel,
// the owning agent and session, a trace observer — runs every case of test/cases/ with the events
// the Node host journals for it, and the host's pipeline sees every tool call.
import { describe, expect, it } from 'vitest';
import { openDshRuntime, type DshCall, type DshHostContext } from '../../dist/hosts/node/dsh.js';
import { caseNames, comparableEvents, loadCase, type TestCase } from '../helpers/cases.js';
import { tempDir } from '../helpers/node-host.js';

interface PipelineEntry {
  tool: string;
  invocationId: string;
  sessionId: string;
  authority?: string;
  verdict: 'allowed' | 'denied';
}

/** A host context over a case's host module, with a policy pipeline that logs and may deny. */
function hostContext(c: TestCase, options: { deny?: string[]; scopes?: string[]; hiddenSkills?: string[] } = {}) {
  const pipeline: PipelineEntry[] = [];
  const traced: any[] = [];
  const tools = Object.entries(c.host.tools ?? {}).map(([name, t]) => ({ name, def: typeof t === 'function' ? { execute: t } : t }));
  const ctx: DshHostContext = {
    agent: { id: 'agent-ops' },
    session: { id: 'session-42', ...(options.scopes ? { scopes: options.scopes } : {}) },
    tools: {
      list: () => tools.map(({ name, def }) => ({ name, description: def.description, inputSchema: def.inputSchema, readOnly: def.readOnly, idempotent: def.idempotent })),
      call(name: string, input: unknown, call: DshCall) {
        const denied = options.deny?.includes(name) ?? false;
        pipeline.push({ tool: name, invocationId: call.invocationId, sessionId: call.sessionId, authority: call.authority?.id, verdict: denied ? 'denied' : 'allowed' });
        if (denied) throw Object.assign(new Error(`policy: ${name} is not allowed in this session`), { code: 'policy.denied' });
        return tools.find((t) => t.name === name)!.def.execute(input, call);
      },
    },
    subagents: {
      list: () => Object.entries(c.host.agents ?? {}).map(([name, a]) => ({ name, idempotent: typeof a === 'function' ? undefined : a.idempotent })),
      run(name: string, input: unknown, call) {
        const a = c.host.agents![name];
        return (typeof a === 'function' ? a : a.run)(input, call);
      },
    },
    skills: c.host.skills && {
      visible: (name: string) => !(options.hiddenSkills ?? []).includes(name),
      load: async (name: string) => (await c.host.skills(name))?.text,
    },
    approval: c.host.approvals && { request: (r) => c.host.approvals(r) },
    ...(c.host.models ? { models: c.host.models } : {}),
    trace: { event: (e) => void traced.push(e) },
  };
  return { ctx, pipeline, traced };
}

describe('the DSH adapter', () => {
  const names = caseNames();

  for (const name of names) {
    it(`runs ${name} with the Node host's events, every tool call through the host's pipeline`, async () => {
      const c = await loadCase(name);
      const { ctx, pipeline, traced } = hostContext(c);
      const dsh = await openDshRuntime(ctx, { dir: tempDir('adw-dsh-'), log: () => undefined });
      try {
        const outcome = await dsh.run({ type: 'inline', template: c.template, dependencies: c.host.dependencies ?? [] }, c.input);
        expect(outcome.status).toBe(c.expected.status);
        if ('output' in c.expected) expect(outcome.output).toEqual(c.expected.output);
        const events = (await dsh.runtime.readEvents(outcome.runId, { limit: 10_000 })).events;
        // The same decisions as on the Node host; the run acts as the session.
        const expected = c.events.map((e) => (e.type === 'run.accepted' ? { ...e, payload: { ...e.payload, authority: { id: 'agent-ops/session-42', scopes: ['*'] } } } : e));
        expect(comparableEvents(events)).toEqual(expected);
        // The host's trace saw every committed event once, in order.
        expect(traced.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
        // Every tool the journal says was called went through the pipeline, once, as this session.
        const toolCalls = events.filter((e) => e.type === 'capability.requested' && e.payload.kind === 'tool').map((e) => e.payload.invocationId);
        expect(pipeline.map((p) => p.invocationId).sort()).toEqual([...toolCalls].sort());
        expect(pipeline.every((p) => p.sessionId === 'session-42' && p.authority === 'agent-ops/session-42')).toBe(true);
        expect((await dsh.runtime.replay(outcome.runId, { mode: 'recorded' })).identical).toBe(true);
      } finally {
        await dsh.close();
      }
    });
  }

  it("gives a tool the host's policy denies back to the agent's model as a tool error; the tool never runs", async () => {
    const c = await loadCase('agent-loop-tools');
    const { ctx, pipeline } = hostContext(c, { deny: ['weather'] });
    let weatherRan = 0;
    const weather = (c.host.tools!.weather as any).execute;
    (c.host.tools!.weather as any).execute = (input: any) => {
      weatherRan++;
      return weather(input);
    };
    const dsh = await openDshRuntime(ctx, { dir: tempDir('adw-dsh-'), log: () => undefined });
    try {
      const outcome = await dsh.run({ type: 'inline', template: c.template }, c.input);
      const events = (await dsh.runtime.readEvents(outcome.runId, { limit: 10_000 })).events;
      // The model's next turn got the host's refusal as the tool's result.
      const refused = events.find((e) => e.type === 'node.agent-tool-result' && e.payload.toolName === 'weather');
      expect(refused?.payload, JSON.stringify(events.filter((e) => e.type === 'node.agent-tool-result'))).toMatchObject({ error: { code: 'policy.denied' } });
      expect(pipeline.filter((p) => p.tool === 'weather').map((p) => p.verdict)).toEqual(['denied']);
      expect(weatherRan).toBe(0);
    } finally {
      (c.host.tools!.weather as any).execute = weather;
      await dsh.close();
    }
  });

  it('runs within the session: a tool outside its scopes is refused and never reaches the pipeline', async () => {
    const c = await loadCase('echo-tool');
    const { ctx, pipeline } = hostContext(c, { scopes: ['tool:other'] });
    const dsh = await openDshRuntime(ctx, { dir: tempDir('adw-dsh-'), log: () => undefined });
    try {
      const outcome = await dsh.run({ type: 'inline', template: c.template }, c.input);
      expect(outcome.status).not.toBe('completed');
      expect(pipeline).toEqual([]);
    } finally {
      await dsh.close();
    }
  });

  it('hands an agent only the skills the host shows this session', async () => {
    const c = await loadCase('agent-loop-tools');
    const { ctx } = hostContext(c, { hiddenSkills: ['terse'] });
    const asked: unknown[] = [];
    const model = c.host.models!.scripted;
    ctx.models = { scripted: { generate: (input: any, context: any) => (asked.push(input.skillTexts), model.generate(input, context)) } };
    const dsh = await openDshRuntime(ctx, { dir: tempDir('adw-dsh-'), log: () => undefined });
    try {
      const outcome = await dsh.run({ type: 'inline', template: c.template }, c.input);
      expect(outcome.status).toBe('failed');
      expect(JSON.stringify(outcome.error)).toContain('terse');
      expect(asked).toEqual([]);
    } finally {
      await dsh.close();
    }
  });
});
