// Validation of a WorkflowTemplate. Reports every error it finds, each with a stable code, a
// JSON pointer into the template and a message a person can act on.
import { isObject, isValidPointer } from '../json.js';
import { limits } from '../limits.js';
import { capabilityCovers } from '../nodes/call.js';
import { nodeDefinitions, nodeKinds } from '../nodes/index.js';
import type { NodeKind, SyntaxChecker } from '../nodes/kind.js';
import { apiVersion, type Binding, type EdgeSpec, type NodeSpec, type ValidationError, type WorkflowTemplate } from '../protocol/template.js';
import { ancestorsOf, linkNodes } from './graph.js';
import { checkAgainst, checkTemplateShape, compileSchema, schemaCompileProblem } from './schemas.js';

export type { SyntaxChecker };

const legacyApiVersions = ['dsh.workflow/v1alpha1'];

/**
 * Every error of a template. `custom`: the kinds of the host's node definitions
 * (nodes/custom.ts), which its nodes may use besides the engine's.
 */
export function validateTemplate(value: unknown, checkSyntax: SyntaxChecker, custom: ReadonlyMap<string, NodeKind> = noKinds): ValidationError[] {
  const errors: ValidationError[] = [];
  const kindOf = (uses: string): NodeKind | undefined => nodeKinds.get(uses) ?? custom.get(uses);
  const add = (code: string, pointer: string, message: string) => errors.push({ code, pointer, message });

  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    add('template.not-object', '', 'a template must be a JSON object');
    return errors;
  }
  const raw = value as Record<string, unknown>;
  if (typeof raw.apiVersion === 'string' && legacyApiVersions.includes(raw.apiVersion)) {
    add('template.legacy-api-version', '/apiVersion', `${raw.apiVersion} is the legacy 0.2 protocol; convert it with \`agent-workflow migrate-template\``);
    return errors;
  }
  if (raw.apiVersion !== apiVersion) {
    add('template.api-version', '/apiVersion', `apiVersion must be ${JSON.stringify(apiVersion)}, got ${JSON.stringify(raw.apiVersion)}`);
  }
  for (const p of checkTemplateShape(value)) {
    if (p.pointer === '/apiVersion') continue;
    add('template.schema', p.pointer, p.message);
  }
  const spec = raw.spec as WorkflowTemplate['spec'] | undefined;
  if (!spec || !Array.isArray(spec.nodes) || !Array.isArray(spec.edges)) return errors;
  const template = value as WorkflowTemplate;
  const nodes = spec.nodes.filter((n) => n && typeof n === 'object' && typeof n.id === 'string');
  if (nodes.length > limits.nodesMax) add('template.too-many-nodes', '/spec/nodes', `at most ${limits.nodesMax} nodes are allowed, found ${nodes.length}`);
  if (spec.edges.length > limits.edgesMax) add('template.too-many-edges', '/spec/edges', `at most ${limits.edgesMax} edges are allowed, found ${spec.edges.length}`);

  // Node ids, types and configuration.
  const seen = new Map<string, number>();
  spec.nodes.forEach((node, i) => {
    if (!node || typeof node !== 'object' || typeof node.id !== 'string') return;
    const at = `/spec/nodes/${i}`;
    if (seen.has(node.id)) add('node.duplicate-id', `${at}/id`, `node id ${JSON.stringify(node.id)} is already used by /spec/nodes/${seen.get(node.id)}`);
    else seen.set(node.id, i);
    const definition = kindOf(node.uses);
    if (!definition) {
      add('node.unknown-type', `${at}/uses`, `unknown node type ${JSON.stringify(node.uses)}; known types: ${[...nodeDefinitions.keys(), ...custom.keys()].join(', ')}`);
      return;
    }
    for (const p of checkAgainst(definition.configSchema, node.config ?? {})) add('node.config-invalid', `${at}/config${p.pointer}`, p.message);
  });

  // Edges; those between known nodes make the graph.
  const edgeKeys = new Set<string>();
  const linked: EdgeSpec[] = [];
  for (let i = 0; i < spec.edges.length; i++) {
    const edge = spec.edges[i];
    if (!edge || typeof edge !== 'object') continue;
    const at = `/spec/edges/${i}`;
    const from = seen.get(edge.from);
    const source = from === undefined ? undefined : spec.nodes[from];
    if (typeof edge.from === 'string' && !source) add('edge.unknown-node', `${at}/from`, `edge from ${JSON.stringify(edge.from)} names no node`);
    if (typeof edge.to === 'string' && !seen.has(edge.to)) add('edge.unknown-node', `${at}/to`, `edge to ${JSON.stringify(edge.to)} names no node`);
    if (source && seen.has(edge.to)) linked.push(edge);
    if (edge.from === edge.to) add('graph.cycle', at, `edge from ${JSON.stringify(edge.from)} to itself makes a cycle`);
    const key = `${edge.from}\u0000${edge.to}\u0000${edge.port ?? ''}`;
    if (edgeKeys.has(key)) add('edge.duplicate', at, `duplicate edge ${edge.from} -> ${edge.to}`);
    edgeKeys.add(key);
    const ports = source ? kindOf(source.uses)?.ports : undefined;
    if (ports) {
      if (!ports.includes(edge.port as string)) {
        add('edge.port-required', `${at}/port`, `an edge leaving ${kindOf(source!.uses)!.label} ${JSON.stringify(edge.from)} needs port ${ports.map((p) => JSON.stringify(p)).join(' or ')}`);
      }
    } else if (edge.port !== undefined && source) {
      add('edge.port-invalid', `${at}/port`, `node ${JSON.stringify(edge.from)} (${source.uses}) has no port ${JSON.stringify(edge.port)}`);
    }
  }

  // Graph shape.
  const roles = nodes.map((n) => kindOf(n.uses)?.role);
  const starts = roles.filter((r) => r === 'start').length;
  if (starts !== 1) add('graph.start-count', '/spec/nodes', `a template needs exactly one core.start@1 node, found ${starts}`);
  if (!roles.includes('end')) add('graph.no-end', '/spec/nodes', 'a template needs at least one core.end@1 node');
  const graph = linkNodes(nodes, linked);
  // The nodes the topological order could not place are the ones on a cycle.
  const cycle = nodes.filter((n) => !graph.position.has(n.id)).map((n) => n.id);
  if (cycle.length > 0) add('graph.cycle', '/spec/edges', `the edges make a cycle through ${cycle.join(', ')}`);
  nodes.forEach((node, n) => {
    const i = seen.get(node.id)!;
    const role = roles[n];
    if (role === 'start' && graph.incoming.get(node.id)!.length > 0) add('graph.start-has-inputs', `/spec/nodes/${i}`, 'core.start@1 cannot have incoming edges');
    if (role === 'end' && graph.outgoing.get(node.id)!.length > 0) add('graph.end-has-outputs', `/spec/nodes/${i}`, 'core.end@1 cannot have outgoing edges');
    if (role !== 'start' && graph.incoming.get(node.id)!.length === 0 && starts === 1) {
      add('graph.unreachable', `/spec/nodes/${i}`, `node ${JSON.stringify(node.id)} has no incoming edge and can never run; connect it to the graph`);
    }
  });

  // Bindings.
  const inputSchema = spec.inputSchema as Record<string, any> | undefined;
  const checkBinding = (b: Binding, at: string, upstream: Set<string> | undefined) => {
    if (!b || typeof b !== 'object') return;
    if (b.source === 'input') {
      if (b.path === undefined) add('binding.bad-path', at, 'an input binding needs a path: "" for the whole run input, "/field/0" for a part of it');
      else if (!isValidPointer(b.path)) add('binding.bad-path', `${at}/path`, `${JSON.stringify(b.path)} is not a JSON pointer (use "" or "/field/0")`);
      else if (inputSchema && inputSchema.additionalProperties === false && inputSchema.properties && b.path !== '') {
        const first = b.path.slice(1).split('/')[0].replace(/~1/g, '/').replace(/~0/g, '~');
        if (!(first in inputSchema.properties)) add('binding.input-path-unknown', `${at}/path`, `the input schema has no property ${JSON.stringify(first)}`);
      }
    } else if (b.source === 'output') {
      if (!seen.has(b.nodeId)) add('binding.unknown-node', `${at}/nodeId`, `no node ${JSON.stringify(b.nodeId)}`);
      else if (upstream && !upstream.has(b.nodeId)) add('binding.not-upstream', `${at}/nodeId`, `node ${JSON.stringify(b.nodeId)} is not upstream of this node, so its output is not known yet`);
      if (b.path !== undefined && !isValidPointer(b.path)) add('binding.bad-path', `${at}/path`, `${JSON.stringify(b.path)} is not a JSON pointer`);
    }
  };
  for (const node of nodes) {
    const i = seen.get(node.id)!;
    if (node.inputs) {
      const upstream = cycle.length > 0 ? undefined : ancestorsOf({ incoming: graph.incoming, edges: linked }, node.id);
      for (const [name, b] of Object.entries(node.inputs)) checkBinding(b, `/spec/nodes/${i}/inputs/${name}`, upstream);
    }
    checkNodeSemantics(node, i, template, add, checkSyntax, kindOf);
  }
  for (const [name, b] of Object.entries(spec.outputs ?? {})) checkBinding(b, `/spec/outputs/${name}`, undefined);

  // Schemas compile.
  const schemas: [unknown, string][] = [
    [spec.inputSchema, '/spec/inputSchema'],
    [spec.outputSchema, '/spec/outputSchema'],
    ...nodes.map((n): [unknown, string] => [n.expects, `/spec/nodes/${seen.get(n.id)}/expects`]),
  ];
  for (const [schema, at] of schemas) {
    if (schema === undefined || typeof schema !== 'object') continue;
    const problem = schemaCompileProblem(schema);
    if (problem) add('schema.invalid', at, `the JSON Schema does not compile: ${problem}`);
  }
  return errors;
}

function checkNodeSemantics(
  node: NodeSpec,
  i: number,
  template: WorkflowTemplate,
  add: (code: string, pointer: string, message: string) => void,
  checkSyntax: SyntaxChecker,
  kindOf: (uses: string) => NodeKind | undefined,
): void {
  const at = `/spec/nodes/${i}`;
  // A member of the wrong type was reported by the template's schema already: the checks below
  // read it as absent instead of failing on it.
  const config = (isObject(node.config) ? node.config : {}) as Record<string, any>;
  const inputs = (isObject(node.inputs) ? node.inputs : {}) as NonNullable<NodeSpec['inputs']>;
  const allowed = strings(template.spec.requires);
  const kind = kindOf(node.uses);
  const checked: NodeSpec = { ...node, config, inputs };
  // The capability of the call a node makes: its own, or its body's (a foreach of a host type).
  const call = kind?.callOf?.(checked);
  const implied = call ? kindOf(call.uses)?.impliedCapability?.(call.config ?? {}) : kind?.impliedCapability?.(config);
  if (implied && !implied.endsWith(':undefined')) {
    if (!allowed.some((p) => capabilityCovers(p, implied))) {
      add('requires.missing', `${at}/uses`, `node ${JSON.stringify(node.id)} needs capability ${JSON.stringify(implied)}; add it to /spec/requires`);
    }
  }
  (Array.isArray(node.requires) ? node.requires : []).forEach((cap, j) => {
    if (typeof cap === 'string' && !allowed.some((p) => capabilityCovers(p, cap))) add('requires.not-allowed', `${at}/requires/${j}`, `capability ${JSON.stringify(cap)} is not in /spec/requires`);
  });
  kind?.validate?.(checked, { at, config, inputs, add, checkSyntax, allowed, kindOf });
}

/** The strings of a list, or none when it is not one. */
function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

const noKinds: ReadonlyMap<string, NodeKind> = new Map();

// Compile the node configs' schemas while the module initialises (schemas.ts does the same for
// the template schema): that happens once, at build time, in the component's snapshot, instead
// of in the first validation of every process.
for (const definition of nodeDefinitions.values()) compileSchema(definition.configSchema);
