// migrate-template on the legacy set: the convertible ones validate and run; the rest is
// reported with JSON pointers; no secret value ever reaches the output.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { migrateTemplate } from '../../dist/hosts/node/catalog/template-migration.js';
import { openRuntime, removeTempDirs, tempDir } from './helpers.js';

const legacyDir = join(__dirname, '..', 'fixtures', 'legacy');
const legacy = Object.fromEntries(readdirSync(legacyDir).map((f) => [f.replace('.legacy.json', ''), JSON.parse(readFileSync(join(legacyDir, f), 'utf8'))]));
const convertible = ['greet', 'summarise', 'triage', 'review-child', 'review-parent'];

const seen: { tool: string; input: any }[] = [];
let rt: WorkflowRuntime;
beforeAll(async () => {
  rt = await openRuntime(tempDir(), {
    tools: {
      upper: { idempotent: true, execute: ({ text }: { text: string }) => ({ text: String(text).toUpperCase() }) },
      'crm.fetch-ticket': {
        readOnly: true,
        execute: (input: any) => {
          seen.push({ tool: 'crm.fetch-ticket', input });
          return { id: input.id, body: 'printer on fire' };
        },
      },
    },
    agents: { summariser: (input: any) => ({ summary: `ticket ${input.ticket.id}: ${input.ticket.body}` }) },
    approvals: () => ({ approved: true, by: 'risk-lead' }),
  });
});
afterAll(async () => {
  await rt?.close();
  removeTempDirs();
});

describe('migrate-template', () => {
  it('the legacy set is what this test expects', () => {
    expect(Object.keys(legacy).sort()).toEqual([...convertible, 'nightly-sync'].sort());
  });

  for (const name of convertible) {
    it(`${name}: converts completely and validates`, async () => {
      const out = migrateTemplate(legacy[name]);
      expect(out.unconverted).toEqual([]);
      expect(out.complete).toBe(true);
      expect(out.template.apiVersion).toBe('workflow.gm-hz.dev/v1alpha1');
      expect(await rt.validate(out.template)).toMatchObject({ ok: true, errors: [] });
      // The runtime parser accepts only the new protocol.
      expect((await rt.validate(legacy[name])).errors).toEqual([{ code: 'template.legacy-api-version', pointer: '/apiVersion', message: expect.stringContaining('migrate-template') }]);
    });
  }

  it('maps names, bindings, owners, durations, retries and layout', () => {
    const greet = migrateTemplate(legacy.greet).template as any;
    expect(greet.metadata).toEqual({ id: 'greet', name: 'Greet someone loudly', authority: 'frontdesk' });
    expect(greet.spec.requires).toEqual(['tool:upper']);
    expect(greet.spec.nodes[1]).toEqual({ id: 'shout', uses: 'tool.call@1', name: 'Upper-case the name', config: { tool: 'upper', idempotent: true }, inputs: { text: { source: 'input', path: '/name' } }, readOnly: true });
    expect(greet.layout).toEqual(legacy.greet.ui);

    const s = migrateTemplate(legacy.summarise);
    const t = s.template as any;
    expect(t.metadata.authority).toBe('support-bot');
    expect(t.spec.requires).toEqual(['agent:summariser', 'tool:crm.fetch-ticket']);
    expect(t.spec.nodes[1]).toMatchObject({ uses: 'tool.call@1', timeoutMs: 30_000, retry: { maxAttempts: 3 }, inputs: { auth: { source: 'literal', value: { credentialRef: 'crm-token' } } } });
    expect(t.spec.nodes[2]).toMatchObject({ uses: 'agent.run@1', config: { agent: 'summariser', instructions: 'Summarise the ticket in one sentence.', outputSchema: { type: 'object', required: ['summary'] } }, timeoutMs: 120_000 });
    expect(t.spec.policies).toEqual({ timeoutMs: 3_600_000 });
    expect(s.notes).toEqual([{ code: 'legacy.credential-ref', pointer: '/spec/secrets/0', message: expect.stringContaining('$CRM_TOKEN') }]);

    const parent = migrateTemplate(legacy['review-parent']).template as any;
    expect(parent.spec.nodes[1]).toMatchObject({ uses: 'workflow.call@1', config: { workflow: { id: 'review-one', revision: 1 } } });
    expect(parent.spec.requires).toEqual(['workflow:review-one']);
  });

  it('reports what it could not convert, with pointers into the legacy document, and never copies a secret value', async () => {
    const out = migrateTemplate(legacy['nightly-sync']);
    expect(out.complete).toBe(false);
    expect(out.unconverted.map((f) => `${f.code} ${f.pointer}`)).toEqual([
      'legacy.field-unsupported /spec/schedule',
      'legacy.secret-value /spec/secrets/0/value',
      'legacy.node-type-unsupported /spec/steps/1/type',
      'legacy.subworkflow-unpinned /spec/steps/2/with/version',
      'legacy.bad-duration /spec/steps/2/timeout',
      'legacy.owner-ref-kind /metadata/ownerRef',
    ]);
    expect(JSON.stringify(out)).not.toContain('hunter2');
    // What was kept as it is fails validation exactly there.
    const errors = (await rt.validate(out.template)).errors.map((e) => `${e.code} ${e.pointer}`);
    expect(errors).toContain('node.unknown-type /spec/nodes/1/uses');
    expect(errors).toContain('node.config-invalid /spec/nodes/2/config/workflow');
  });

  it('refuses a document that is not a legacy template', () => {
    expect(() => migrateTemplate({ apiVersion: 'workflow.gm-hz.dev/v1alpha1' })).toThrow(/not a legacy template/);
  });
});

describe('converted templates run', () => {
  const convert = (name: string) => migrateTemplate(legacy[name]).template;

  it('greet and summarise run inline with small tools and agents; the credential stays a reference', async () => {
    expect(await (await rt.launch({ type: 'inline', template: convert('greet') }, { input: { name: 'ada' } })).result).toMatchObject({ status: 'completed', output: { greeting: 'HELLO ADA' } });
    const s = await (await rt.launch({ type: 'inline', template: convert('summarise') }, { input: { ticket: 'T-7' } })).result;
    expect(s).toMatchObject({ status: 'completed', output: { summary: 'ticket T-7: printer on fire' } });
    expect(seen).toEqual([{ tool: 'crm.fetch-ticket', input: { id: 'T-7', auth: { credentialRef: 'crm-token' } } }]);
  });

  it('triage takes both branches', async () => {
    const high = await (await rt.launch({ type: 'inline', template: convert('triage') }, { input: { score: 80 } })).result;
    const low = await (await rt.launch({ type: 'inline', template: convert('triage') }, { input: { score: 10 } })).result;
    expect(high.status).toBe('completed');
    expect(low.status).toBe('completed');
    const nodesOf = async (runId: string) => new Set((await rt.readEvents(runId, { limit: 1000 })).events.filter((e: any) => e.type === 'node.output-committed').map((e: any) => e.node.id));
    expect([...(await nodesOf(high.runId))].sort()).toEqual(['escalate', 'high', 'risky', 'start']);
    expect([...(await nodesOf(low.runId))].sort()).toEqual(['auto', 'low', 'risky', 'start']);
  });

  it('the converted parent calls the converted child through the catalog', async () => {
    for (const name of ['review-child', 'review-parent']) {
      const template = convert(name) as any;
      await rt.catalog.putDraft(template, { expectedDraftRevision: 0, by: 'migration' });
      expect((await rt.catalog.publish(template.metadata.id, { expectedDraftRevision: 1 })).revision).toBe(1);
    }
    const out = await (await rt.launch({ type: 'published', id: 'review-batch', revision: 1 }, { input: { item: 'lease' } })).result;
    expect(out).toMatchObject({ status: 'completed', output: { review: { checked: 'LEASE' } } });
  });
});
