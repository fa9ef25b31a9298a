// Offline converter from the legacy 0.2 template protocol (`dsh.workflow/v1alpha1`) to
// `workflow.gm-hz.dev/v1alpha1`. It never guesses: whatever has no faithful equivalent is left
// out (or kept as is, so validation points at it) and reported with a JSON pointer into the
// legacy document. The legacy shape is documented in docs/catalog.md.
//
// Secrets are never copied. A legacy secret binding becomes a static credential reference: a
// literal `{ "credentialRef": "<name>" }` input that the tool or agent resolves through the
// gateway. An inline secret value in the legacy document is dropped and reported.

export const legacyApiVersion = 'dsh.workflow/v1alpha1';
export const targetApiVersion = 'workflow.gm-hz.dev/v1alpha1';

export interface MigrationFinding {
  code: string;
  /** JSON pointer into the legacy document. */
  pointer: string;
  message: string;
}

export interface TemplateMigration {
  /** The converted template (also when incomplete: then it will not validate as it is). */
  template: Record<string, unknown>;
  /** True when nothing was left unconverted. */
  complete: boolean;
  /** What could not be converted; each needs a person. */
  unconverted: MigrationFinding[];
  /** What was converted in a way a person should know about (credentials to register, ...). */
  notes: MigrationFinding[];
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = Record<string, any>;

const durationUnitsMs: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const esc = (t: string) => t.replace(/~/g, '~0').replace(/\//g, '~1');

/** Legacy node types with a direct equivalent, and how their `with` block maps to `config`. */
const stepTypes: Record<string, { uses: string; config: (w: Obj, at: string, m: Migrator) => Obj | undefined; capability?: (c: Obj) => string | undefined }> = {
  'core.start@1': { uses: 'core.start@1', config: () => undefined },
  'core.end@1': { uses: 'core.end@1', config: () => undefined },
  'core.script@1': { uses: 'core.script@1', config: (w, at, m) => m.pick(w, at, { code: 'source', limits: 'limits' }) },
  'core.condition@1': { uses: 'core.condition@1', config: (w, at, m) => m.pick(w, at, { op: 'operator' }) },
  'dsh.tool@1': { uses: 'tool.call@1', config: (w, at, m) => m.pick(w, at, { name: 'tool', idempotent: 'idempotent' }), capability: (c) => `tool:${c.tool}` },
  'dsh.agent@1': {
    uses: 'agent.run@1',
    config: (w, at, m) => m.pick(w, at, { agent: 'agent', prompt: 'instructions', schema: 'outputSchema' }),
    capability: (c) => `agent:${c.agent}`,
  },
  'dsh.approval@1': { uses: 'human.approval@1', config: (w, at, m) => m.pick(w, at, { message: 'prompt', approvers: 'approvers' }), capability: () => 'approval' },
  'core.subworkflow@1': {
    uses: 'workflow.call@1',
    config: (w, at, m) => {
      m.unknownKeys(w, at, ['workflow', 'version']);
      if (typeof w.workflow !== 'string') {
        m.unconvertible('legacy.subworkflow-target', `${at}/workflow`, 'a sub-workflow step needs the called workflow id in with.workflow');
        return {};
      }
      if (!Number.isInteger(w.version) || w.version < 1) {
        m.unconvertible('legacy.subworkflow-unpinned', `${at}/version`, `the call of ${w.workflow} follows ${JSON.stringify(w.version ?? 'latest')}; workflow.call@1 needs a fixed published revision: set one`);
        return { workflow: { id: w.workflow } };
      }
      return { workflow: { id: w.workflow, revision: w.version } };
    },
    capability: (c) => (typeof c.workflow?.id === 'string' ? `workflow:${c.workflow.id}` : undefined),
  },
};

class Migrator {
  readonly unconverted: MigrationFinding[] = [];
  readonly notes: MigrationFinding[] = [];
  private readonly secrets = new Map<string, { env?: string; hasValue: boolean }>();
  private readonly requires = new Set<string>();

  unconvertible(code: string, pointer: string, message: string): void {
    this.unconverted.push({ code, pointer, message });
  }

  note(code: string, pointer: string, message: string): void {
    this.notes.push({ code, pointer, message });
  }

  unknownKeys(o: Obj, at: string, known: string[]): void {
    for (const k of Object.keys(o)) if (!known.includes(k)) this.unconvertible('legacy.field-unsupported', `${at}/${esc(k)}`, `${JSON.stringify(k)} has no equivalent in ${targetApiVersion}; it was left out`);
  }

  /** Copies renamed keys of a legacy `with` block; reports the others. */
  pick(w: Obj, at: string, renames: Record<string, string>): Obj {
    this.unknownKeys(w, at, Object.keys(renames));
    const out: Obj = {};
    for (const [from, to] of Object.entries(renames)) if (w[from] !== undefined) out[to] = w[from];
    return out;
  }

  duration(value: unknown, at: string): number | undefined {
    if (value === undefined) return undefined;
    if (Number.isInteger(value) && (value as number) > 0) return value as number;
    const m = typeof value === 'string' ? /^([0-9]+)(ms|s|m|h|d)$/.exec(value) : null;
    if (m) return Number(m[1]) * durationUnitsMs[m[2]];
    this.unconvertible('legacy.bad-duration', at, `${JSON.stringify(value)} is not a duration like "250ms", "30s", "5m", "2h" or "1d"`);
    return undefined;
  }

  readSecrets(secrets: unknown, at: string): void {
    if (secrets === undefined) return;
    if (!Array.isArray(secrets)) {
      this.unconvertible('legacy.field-unsupported', at, 'secrets must be a list of { name, env? }');
      return;
    }
    secrets.forEach((s, i) => {
      if (!isObj(s) || typeof s.name !== 'string') {
        this.unconvertible('legacy.secret-invalid', `${at}/${i}`, 'a secret needs a name');
        return;
      }
      this.secrets.set(s.name, { env: typeof s.env === 'string' ? s.env : undefined, hasValue: s.value !== undefined });
      if (s.value !== undefined) {
        this.unconvertible('legacy.secret-value', `${at}/${i}/value`, `secret ${s.name} carries its value in the template; the value was dropped (never copied): store it in the gateway's credential store under ${JSON.stringify(s.name)}`);
      } else {
        this.note('legacy.credential-ref', `${at}/${i}`, `secret ${s.name} became credential reference ${JSON.stringify(s.name)}; register it with the gateway${s.env ? ` (it was read from $${s.env})` : ''}`);
      }
    });
  }

  binding(b: unknown, at: string): Obj | undefined {
    if (!isObj(b)) {
      this.unconvertible('legacy.binding-invalid', at, 'a binding is an object: { input }, { step, path? }, { value } or { secret }');
      return undefined;
    }
    const keys = Object.keys(b);
    if ('value' in b && keys.length === 1) return { source: 'literal', value: b.value as Json };
    if (typeof b.input === 'string' && keys.length === 1) return { source: 'input', path: b.input };
    if (typeof b.step === 'string' && keys.every((k) => k === 'step' || k === 'path')) return { source: 'output', nodeId: b.step, ...(typeof b.path === 'string' ? { path: b.path } : {}) };
    if (typeof b.secret === 'string' && keys.length === 1) {
      if (!this.secrets.has(b.secret)) this.note('legacy.credential-ref', at, `secret ${b.secret} is not declared in /spec/secrets; it became credential reference ${JSON.stringify(b.secret)}`);
      return { source: 'literal', value: { credentialRef: b.secret } };
    }
    this.unconvertible('legacy.binding-invalid', at, `binding ${JSON.stringify(b)} is none of { input }, { step, path? }, { value }, { secret }`);
    return undefined;
  }

  bindings(map: unknown, at: string): Obj | undefined {
    if (map === undefined) return undefined;
    if (!isObj(map)) {
      this.unconvertible('legacy.binding-invalid', at, 'expected an object of named bindings');
      return undefined;
    }
    const out: Obj = {};
    for (const [name, b] of Object.entries(map)) {
      const converted = this.binding(b, `${at}/${esc(name)}`);
      if (converted) out[name] = converted;
    }
    return out;
  }

  step(step: unknown, at: string): Obj | undefined {
    if (!isObj(step) || typeof step.id !== 'string' || typeof step.type !== 'string') {
      this.unconvertible('legacy.step-invalid', at, 'a step needs an id and a type');
      return undefined;
    }
    this.unknownKeys(step, at, ['id', 'type', 'title', 'with', 'args', 'timeout', 'retries', 'readOnly', 'expect']);
    const kind = stepTypes[step.type];
    const node: Obj = { id: step.id };
    if (!kind) {
      this.unconvertible('legacy.node-type-unsupported', `${at}/type`, `node type ${step.type} has no equivalent; the step was kept as it is and will not validate until it is replaced`);
      node.uses = step.type;
      if (isObj(step.with)) node.config = step.with;
    } else {
      node.uses = kind.uses;
      const config = kind.config(isObj(step.with) ? step.with : {}, `${at}/with`, this);
      if (config && Object.keys(config).length > 0) node.config = config;
      const capability = kind.capability?.(config ?? {});
      if (capability && !capability.endsWith(':undefined')) this.requires.add(capability);
    }
    if (typeof step.title === 'string') node.name = step.title;
    const inputs = this.bindings(step.args, `${at}/args`);
    if (inputs && Object.keys(inputs).length > 0) node.inputs = inputs;
    if (step.expect !== undefined) node.expects = step.expect;
    const timeoutMs = this.duration(step.timeout, `${at}/timeout`);
    if (timeoutMs !== undefined) node.timeoutMs = timeoutMs;
    if (step.retries !== undefined) {
      if (Number.isInteger(step.retries) && step.retries >= 0) node.retry = { maxAttempts: step.retries + 1 };
      else this.unconvertible('legacy.bad-retries', `${at}/retries`, 'retries must be a whole number of extra attempts');
    }
    if (typeof step.readOnly === 'boolean') node.readOnly = step.readOnly;
    return node;
  }

  metadata(meta: unknown): Obj {
    if (!isObj(meta)) {
      this.unconvertible('legacy.metadata-invalid', '/metadata', 'metadata must be an object with an id');
      return {};
    }
    this.unknownKeys(meta, '/metadata', ['id', 'title', 'description', 'labels', 'owner', 'ownerRef']);
    const out: Obj = {};
    if (meta.id !== undefined) out.id = meta.id;
    if (typeof meta.title === 'string') out.name = meta.title;
    if (typeof meta.description === 'string') out.description = meta.description;
    if (isObj(meta.labels)) out.labels = meta.labels;
    let fromRef: string | undefined;
    if (meta.ownerRef !== undefined) {
      const ref = meta.ownerRef;
      if (isObj(ref) && ref.kind === 'Authority' && typeof ref.name === 'string') fromRef = ref.name;
      else this.unconvertible('legacy.owner-ref-kind', '/metadata/ownerRef', `ownerRef ${JSON.stringify(ref)} does not name an Authority; an authority is who may run the workflow, choose one and set /metadata/authority`);
    }
    if (typeof meta.owner === 'string' && fromRef !== undefined && meta.owner !== fromRef) {
      this.unconvertible('legacy.owner-conflict', '/metadata/owner', `owner ${JSON.stringify(meta.owner)} and ownerRef ${JSON.stringify(fromRef)} disagree; ownerRef was used`);
    }
    const authority = fromRef ?? (typeof meta.owner === 'string' ? meta.owner : undefined);
    if (authority !== undefined) out.authority = authority;
    return out;
  }

  convert(doc: Obj): Obj {
    this.unknownKeys(doc, '', ['apiVersion', 'kind', 'metadata', 'spec', 'ui']);
    if (doc.kind !== 'Workflow') this.unconvertible('legacy.kind', '/kind', `kind ${JSON.stringify(doc.kind)} is not a legacy Workflow`);
    const spec: Obj = isObj(doc.spec) ? doc.spec : {};
    this.unknownKeys(spec, '/spec', ['input', 'output', 'secrets', 'steps', 'links', 'result', 'timeout']);
    this.readSecrets(spec.secrets, '/spec/secrets');
    const steps: unknown[] = Array.isArray(spec.steps) ? spec.steps : [];
    if (!Array.isArray(spec.steps)) this.unconvertible('legacy.steps-missing', '/spec/steps', 'a legacy workflow lists its steps in /spec/steps');
    const nodes = steps.map((s, i) => this.step(s, `/spec/steps/${i}`)).filter((n): n is Obj => n !== undefined);
    const links: unknown[] = Array.isArray(spec.links) ? spec.links : [];
    const edges = links.flatMap((l, i) => {
      const at = `/spec/links/${i}`;
      if (!isObj(l) || typeof l.from !== 'string' || typeof l.to !== 'string') {
        this.unconvertible('legacy.link-invalid', at, 'a link needs from and to');
        return [];
      }
      this.unknownKeys(l, at, ['from', 'to', 'when']);
      if (l.when !== undefined && typeof l.when !== 'boolean') this.unconvertible('legacy.link-invalid', `${at}/when`, 'when must be true or false');
      return [{ from: l.from, to: l.to, ...(typeof l.when === 'boolean' ? { port: String(l.when) } : {}) }];
    });
    const out: Obj = { apiVersion: targetApiVersion, kind: 'WorkflowTemplate', metadata: this.metadata(doc.metadata), spec: {} };
    if (spec.input !== undefined) out.spec.inputSchema = spec.input;
    if (spec.output !== undefined) out.spec.outputSchema = spec.output;
    if (this.requires.size > 0) out.spec.requires = [...this.requires].sort();
    out.spec.nodes = nodes;
    out.spec.edges = edges;
    const outputs = this.bindings(spec.result, '/spec/result');
    if (outputs && Object.keys(outputs).length > 0) out.spec.outputs = outputs;
    const timeoutMs = this.duration(spec.timeout, '/spec/timeout');
    if (timeoutMs !== undefined) out.spec.policies = { timeoutMs };
    if (doc.ui !== undefined) out.layout = doc.ui;
    return out;
  }
}

/** Converts one legacy template. Throws only when the document is not a legacy template at all. */
export function migrateTemplate(doc: unknown): TemplateMigration {
  if (!isObj(doc) || doc.apiVersion !== legacyApiVersion) {
    const got = isObj(doc) ? JSON.stringify(doc.apiVersion) : 'not an object';
    throw Object.assign(new Error(`not a legacy template: apiVersion must be ${JSON.stringify(legacyApiVersion)}, got ${got}`), { code: 'template.not-legacy' });
  }
  const m = new Migrator();
  const template = m.convert(doc);
  return { template, complete: m.unconverted.length === 0, unconverted: m.unconverted, notes: m.notes };
}
