// The catalog verbs of the CLI, run as a child process like a person would, plus the
// `run <id>@<rev>` target resolution that main.ts's `run` uses.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseArgs } from '../../dist/hosts/node/cli/args.js';
import { catalogCommands, resolveRunTarget, runPublished } from '../../dist/hosts/node/cli/commands/catalog.js';
import { openRuntime, removeTempDirs, tempDir, upperTemplate } from './helpers.js';

afterAll(removeTempDirs);

const main = join(__dirname, '..', '..', 'dist', 'hosts', 'node', 'cli', 'main.js');
const legacyDir = join(__dirname, '..', 'fixtures', 'legacy');

function cli(cwd: string, ...args: string[]): Promise<{ code: number; out: any[]; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [main, ...args], { cwd, env: { ...process.env, USER: 'tester' } }, (error, stdout, stderr) => {
      const code = error ? ((error as { code?: number }).code ?? 70) : 0;
      resolve({ code, out: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)), err: stderr });
    });
  });
}

/** Runs a catalog verb in this process (as main.ts would), capturing what it prints. */
async function verb(name: string, flags: string[], ...args: string[]): Promise<{ code: number; out: any[]; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const [stdout, stderr] = [process.stdout.write, process.stderr.write];
  process.stdout.write = ((c: string) => (out.push(c), true)) as typeof process.stdout.write;
  process.stderr.write = ((c: string) => (err.push(c), true)) as typeof process.stderr.write;
  try {
    const code = await catalogCommands[name].run(parseArgs(args, flags));
    return { code, out: out.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l)), err: err.join('') };
  } finally {
    process.stdout.write = stdout;
    process.stderr.write = stderr;
  }
}

describe('catalog CLI', () => {
  it('draft put / get, publish with CAS, search, describe, diff', async () => {
    const cwd = tempDir('catalog-cli-');
    const dir = join(cwd, '.agent-workflow');
    const file = join(cwd, 'wf.json');
    writeFileSync(file, JSON.stringify(upperTemplate('cli-wf', { name: 'CLI workflow' })));

    // Two real processes: the verbs are wired into the CLI and their errors map to exit codes.
    let r = await cli(cwd, 'draft', 'put', file);
    expect(r.code).toBe(0);
    expect(r.out[0]).toMatchObject({ apiVersion: 'agent-workflow.cli/v1', kind: 'WorkflowDraft', draft: { id: 'cli-wf', draftRevision: 1, updatedBy: 'tester' } });
    r = await cli(cwd, 'draft', 'put', file);
    expect(r.code).toBe(8);
    expect(r.out[0]).toMatchObject({ kind: 'Error', error: { code: 'catalog.draft-conflict' } });

    r = await verb('publish', [], 'cli-wf', '--expected', '1', '--dir', dir, '--by', 'tester');
    expect(r.code).toBe(0);
    expect(r.out[0]).toMatchObject({ kind: 'WorkflowRevision', revision: { id: 'cli-wf', revision: 1, draftRevision: 1, publishedBy: 'tester', created: true } });

    const edited = upperTemplate('cli-wf', { name: 'CLI workflow' });
    edited.spec.requires = [];
    writeFileSync(file, JSON.stringify(edited));
    expect((await verb('draft', [], 'put', file, '--expected', '1', '--dir', dir)).code).toBe(0);
    r = await verb('publish', [], 'cli-wf', '--expected', '2', '--dir', dir);
    expect(r.code).toBe(3);
    expect(r.out[0]).toMatchObject({ kind: 'PublishRefused', ok: false, errors: [{ code: 'requires.missing', pointer: '/spec/nodes/1/uses' }] });
    expect(r.err).toContain('/spec/nodes/1/uses: requires.missing');

    edited.spec.requires = ['tool:*'];
    writeFileSync(file, JSON.stringify(edited));
    expect((await verb('draft', [], 'put', file, '--expected', '2', '--dir', dir)).code).toBe(0);
    expect((await verb('publish', [], 'cli-wf', '--expected', '3', '--dir', dir)).out[0].revision).toMatchObject({ revision: 2 });

    r = await verb('draft', [], 'get', 'cli-wf', '--dir', dir);
    expect(r.out[0].draft).toMatchObject({ draftRevision: 3, lastRevision: 2, template: edited });

    expect((await verb('search', [], 'cli', '--dir', dir)).out[0]).toMatchObject({ kind: 'SearchResult', hits: [{ id: 'cli-wf', name: 'CLI workflow', draftRevision: 3, revisions: [1, 2] }] });

    r = await verb('describe', [], 'cli-wf@2', '--view', 'plan', '--dir', dir);
    expect(r.out[0]).toMatchObject({ kind: 'WorkflowDescription', view: 'plan', id: 'cli-wf', revision: 2, plan: { root: 'cli-wf@2' } });
    await expect(verb('describe', [], 'cli-wf@9', '--dir', dir)).rejects.toMatchObject({ code: 'catalog.revision-not-found' });
    await expect(verb('describe', [], 'cli-wf', '--dir', dir)).rejects.toMatchObject({ code: 'cli.usage' });

    r = await verb('diff', [], 'cli-wf@1', 'cli-wf@2', '--dir', dir);
    expect(r.out[0]).toMatchObject({ kind: 'SemanticDiff', same: false, changes: [{ op: 'replace', pointer: '/spec/requires/0', before: 'tool:upper', after: 'tool:*' }] });
  });

  it('migrate-template writes the converted template and reports what it could not convert', async () => {
    const cwd = tempDir('catalog-cli-');
    let r = await cli(cwd, 'migrate-template', join(legacyDir, 'triage.legacy.json'), '--out', 'triage.json');
    expect(r.code).toBe(0);
    expect(r.out[0]).toMatchObject({ kind: 'TemplateMigration', complete: true, out: 'triage.json', unconverted: [] });
    expect(JSON.parse(readFileSync(join(cwd, 'triage.json'), 'utf8')).apiVersion).toBe('workflow.gm-hz.dev/v1alpha1');

    r = await cli(cwd, 'migrate-template', join(legacyDir, 'nightly-sync.legacy.json'));
    expect(r.code).toBe(3);
    expect(r.out[0].complete).toBe(false);
    expect(r.out[0].template.apiVersion).toBe('workflow.gm-hz.dev/v1alpha1');
    expect(r.err).toContain('/spec/steps/1/type: legacy.node-type-unsupported');
    expect(r.err + JSON.stringify(r.out)).not.toContain('hunter2');
  });
});

describe('run <id>@<rev>', () => {
  it('resolves to a published target, and runs it', async () => {
    const dir = tempDir();
    const rt = await openRuntime(dir);
    try {
      expect(await resolveRunTarget('examples/echo/echo.json', rt)).toBeUndefined();
      expect(await resolveRunTarget('cli-run@2', rt)).toEqual({ type: 'published', id: 'cli-run', revision: 2 });
      await rt.catalog.putDraft(upperTemplate('cli-run'), { expectedDraftRevision: 0 });
      await rt.catalog.publish('cli-run', { expectedDraftRevision: 1 });
      const target = (await resolveRunTarget('cli-run@1', rt))!;
      const writes: string[] = [];
      const write = process.stdout.write;
      process.stdout.write = ((chunk: string) => (writes.push(chunk), true)) as typeof process.stdout.write;
      let code: number;
      try {
        code = await runPublished(rt, target, { input: { word: 'cli' } });
      } finally {
        process.stdout.write = write;
      }
      expect(code).toBe(0);
      expect(JSON.parse(writes[0])).toMatchObject({ kind: 'RunResult', status: 'completed', output: { text: 'CLI' } });
    } finally {
      await rt.close();
    }
  });
});
