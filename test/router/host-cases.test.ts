// Every host-independent case of test/cases/ on the router host, through the built files in
// dist/ (the component, the file journal, the cadence loop), on both profiles. One host per
// profile runs the cases one after the other; its tools delegate to the current case's.
import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caseNames, comparableEvents, loadCase, type CaseEvent, type TestCase } from '../helpers/cases.js';
import { tempDir } from './helpers.js';

const { RouterHost } = await import('../../dist/hosts/router/index.js');

const names = caseNames();
const cases: TestCase[] = [];
for (const name of names) cases.push(await loadCase(name));

let current: TestCase | undefined;
const fn = (v: any) => (typeof v === 'function' ? v : v.execute ?? v.run);
const toolNames = new Set(cases.flatMap((c) => Object.keys(c.host.tools ?? {})));
const agentNames = new Set(cases.flatMap((c) => Object.keys(c.host.agents ?? {})));
const tools = Object.fromEntries([...toolNames].map((n) => [n, { execute: (input: any, ctx: any) => fn(current!.host.tools![n])(input, ctx) }]));
const agents = Object.fromEntries([...agentNames].map((n) => [n, { run: (input: any, ctx: any) => fn(current!.host.agents![n])(input, ctx) }]));
const approvals = (request: any, ctx: any) => current?.host.approvals?.(request, ctx);
// A tool's effect class and description are part of what an agent's model turn records.
const toolTraits = Object.fromEntries(cases.flatMap((c) => Object.entries(c.host.tools ?? {}).filter(([, v]) => typeof v === 'object').map(([n, v]) => [n, { readOnly: v.readOnly, idempotent: v.idempotent, description: v.description }])));
for (const [n, traits] of Object.entries(toolTraits)) Object.assign(tools[n], traits);
const modelNames = new Set(cases.flatMap((c) => Object.keys(c.host.models ?? {})));
const models = Object.fromEntries([...modelNames].map((n) => [n, { generate: (input: any, ctx: any) => current!.host.models![n].generate(input, ctx) }]));
const skills = (name: string) => current?.host.skills?.(name);

describe.each(['edge', 'standalone'] as const)('test/cases on the router host (%s)', (profile) => {
  let host: any;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir(`router-cases-${profile}-`);
    host = await RouterHost.open({ dir, profile, cadenceMs: 1, tools, agents, models, skills, approvals, log: () => undefined });
  });
  afterAll(async () => {
    await host?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('has cases to run', () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
  });

  for (const c of cases) {
    it(c.name, async () => {
      current = c;
      const handle = await host.launch({ type: 'inline', template: c.template, dependencies: c.host.dependencies ?? [] }, c.input);
      const outcome = await handle.settled();
      expect(outcome.status).toBe(c.expected.status);
      if ('output' in c.expected) expect(outcome.output).toEqual(c.expected.output);
      else expect(outcome.output).toBeUndefined();
      expect(outcome.error?.code).toBe(c.expected.errorCode);
      expect((outcome.error?.detail as any)?.error?.code).toBe((c.expected as any).nodeErrorCode);
      expect(outcome.pausedReason).toBe(c.expected.pausedReason);
      const events = host.events(handle.runId);
      expect(events.map((e: any) => e.type)).toEqual(c.expected.eventTypes);
      events.forEach((e: any, i: number) => expect(e.seq).toBe(i + 1));
      const actual = comparableEvents(events);
      expect(actual).toEqual(c.events);
      const report = host.replay(handle.runId, 'recorded');
      expect(report.identical).toBe(true);
      expect(report.unrecordedCapabilities).toEqual(c.expected.status === 'paused' ? expect.any(Array) : []);
      expect(host.stats().phaseFailures).toEqual({ cancellation: 0, schedule: 0, frontier: 0, admission: 0, dispatch: 0, housekeeping: 0 });
    });
  }
});
