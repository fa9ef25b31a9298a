// Every host-independent case of test/cases/ through the built component on the Node host.
import { afterAll, describe, expect, it } from 'vitest';
import { caseNames, comparableEvents, loadCase } from '../helpers/cases.js';
import { openRuntime } from '../helpers/node-host.js';

const names = caseNames();

describe('test/cases on the Node host', () => {
  it('has cases to run', () => {
    expect(names.length).toBeGreaterThanOrEqual(10);
  });

  for (const name of names) {
    it(name, async () => {
      const c = await loadCase(name);
      const rt = await openRuntime(c.host);
      try {
        const handle = await rt.launch({ type: 'inline', template: c.template, dependencies: c.host.dependencies ?? [] }, { input: c.input });
        const outcome = await handle.settled();
        expect(outcome.status).toBe(c.expected.status);
        if ('output' in c.expected) expect(outcome.output).toEqual(c.expected.output);
        else expect(outcome.output).toBeUndefined();
        expect(outcome.error?.code).toBe(c.expected.errorCode);
        expect((outcome.error?.detail as any)?.error?.code).toBe((c.expected as any).nodeErrorCode);
        expect(outcome.pausedReason).toBe(c.expected.pausedReason);
        const events = (await rt.readEvents(handle.runId, { limit: 10_000 })).events;
        expect(events.map((e) => e.type)).toEqual(c.expected.eventTypes);
        events.forEach((e, i) => expect(e.seq).toBe(i + 1));
        expect(comparableEvents(events)).toEqual(c.events);
        const report = await rt.replay(handle.runId, { mode: 'recorded' });
        expect(report.identical).toBe(true);
        expect(report.unrecordedCapabilities).toEqual(c.expected.status === 'paused' ? expect.any(Array) : []);
      } finally {
        await rt.close();
      }
    });
  }
});

afterAll(() => undefined);
