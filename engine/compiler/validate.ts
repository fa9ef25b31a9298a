// Validation of a WorkflowTemplate. Reports every error it finds, each with a stable code, a
// JSON pointer into the template and a message a person can act on.
import { isValidPointer } from '../json.js';
import { limits } from '../limits.js';
import { capabilityCovers, conditionOperators, impliedCapability, nodeDefinitions } from '../protocol/node-definitions.js';
import { apiVersion, type Binding, type NodeSpec, type ValidationError, type WorkflowTemplate } from '../protocol/template.js';
import { templateSchema } from '../protocol/template-schema.js';
import { ancestorsOf, buildGraph, topologicalOrder } from './graph.js';
import { checkAgainst, compileSchema, schemaCompileProblem } from './schemas.js';

export type SyntaxChecker = (source: string) => { message: string; line?: number } | undefined;

const legacyApiVersions = ['dsh.workflow/v1alpha1'];
const binaryOperators = new Set(['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'not-in', 'contains']);

export function validateTemplate(value: unknown, checkSyntax: SyntaxChecker): ValidationError[] {
  const errors: ValidationError[] = [];
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
  for (const p of checkAgainst(templateSchema, value)) {
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
    const definition = nodeDefinitions.get(node.uses);
    if (!definition) {
      add('node.unknown-type', `${at}/uses`, `unknown node type ${JSON.stringify(node.uses)}; known types: ${[...nodeDefinitions.keys()].join(', ')}`);
      return;
    }
    for (const p of checkAgainst(definition.configSchema, node.config ?? {})) add('node.config-invalid', `${at}/config${p.pointer}`, p.message);
  });

  // Edges.
  const edgeKeys = new Set<string>();
  spec.edges.forEach((edge, i) => {
    if (!edge || typeof edge !== 'object') return;
    const at = `/spec/edges/${i}`;
    for (const end of ['from', 'to'] as const) {
      if (typeof edge[end] === 'string' && !seen.has(edge[end])) add('edge.unknown-node', `${at}/${end}`, `edge ${end} ${JSON.stringify(edge[end])} names no node`);
    }
    if (edge.from === edge.to) add('graph.cycle', at, `edge from ${JSON.stringify(edge.from)} to itself makes a cycle`);
    const key = `${edge.from}\u0000${edge.to}\u0000${edge.port ?? ''}`;
    if (edgeKeys.has(key)) add('edge.duplicate', at, `duplicate edge ${edge.from} -> ${edge.to}`);
    edgeKeys.add(key);
    const source = nodes.find((n) => n.id === edge.from);
    if (source?.uses === 'core.condition@1') {
      if (edge.port !== 'true' && edge.port !== 'false') add('edge.port-required', `${at}/port`, `an edge leaving condition ${JSON.stringify(edge.from)} needs port "true" or "false"`);
    } else if (edge.port !== undefined && source) {
      add('edge.port-invalid', `${at}/port`, `node ${JSON.stringify(edge.from)} (${source.uses}) has no port ${JSON.stringify(edge.port)}`);
    }
  });

  // Graph shape.
  const starts = nodes.filter((n) => n.uses === 'core.start@1');
  if (starts.length !== 1) add('graph.start-count', '/spec/nodes', `a template needs exactly one core.start@1 node, found ${starts.length}`);
  if (!nodes.some((n) => n.uses === 'core.end@1')) add('graph.no-end', '/spec/nodes', 'a template needs at least one core.end@1 node');
  const { cycle } = topologicalOrder(nodes, spec.edges.filter((e) => e && seen.has(e.from) && seen.has(e.to)));
  if (cycle.length > 0) add('graph.cycle', '/spec/edges', `the edges make a cycle through ${cycle.join(', ')}`);
  const graph = buildGraph({ ...template, spec: { ...spec, nodes, edges: spec.edges.filter((e) => e && seen.has(e.from) && seen.has(e.to)) } });
  for (const node of nodes) {
    const i = seen.get(node.id)!;
    if (node.uses === 'core.start@1' && graph.incoming.get(node.id)!.length > 0) add('graph.start-has-inputs', `/spec/nodes/${i}`, 'core.start@1 cannot have incoming edges');
    if (node.uses === 'core.end@1' && graph.outgoing.get(node.id)!.length > 0) add('graph.end-has-outputs', `/spec/nodes/${i}`, 'core.end@1 cannot have outgoing edges');
    if (node.uses !== 'core.start@1' && graph.incoming.get(node.id)!.length === 0 && starts.length === 1) {
      add('graph.unreachable', `/spec/nodes/${i}`, `node ${JSON.stringify(node.id)} has no incoming edge and can never run; connect it to the graph`);
    }
  }

  // Bindings.
  const inputSchema = spec.inputSchema as Record<string, any> | undefined;
  const checkBinding = (b: Binding, at: string, upstream: Set<string> | undefined) => {
    if (!b || typeof b !== 'object') return;
    if (b.source === 'input') {
      if (!isValidPointer(b.path)) add('binding.bad-path', `${at}/path`, `${JSON.stringify(b.path)} is not a JSON pointer (use "" or "/field/0")`);
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
    const upstream = cycle.length > 0 ? undefined : ancestorsOf(graph, node.id);
    for (const [name, b] of Object.entries(node.inputs ?? {})) checkBinding(b, `/spec/nodes/${i}/inputs/${name}`, upstream);
    checkNodeSemantics(node, i, template, add, checkSyntax);
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
): void {
  const at = `/spec/nodes/${i}`;
  const config = (node.config ?? {}) as Record<string, any>;
  const inputs = node.inputs ?? {};
  const allowed = template.spec.requires ?? [];
  const implied = nodeDefinitions.has(node.uses) ? impliedCapability(node.uses, node.config) : undefined;
  if (implied && !implied.endsWith(':undefined')) {
    if (!allowed.some((p) => capabilityCovers(p, implied))) {
      add('requires.missing', `${at}/uses`, `node ${JSON.stringify(node.id)} needs capability ${JSON.stringify(implied)}; add it to /spec/requires`);
    }
  }
  (node.requires ?? []).forEach((cap, j) => {
    if (!allowed.some((p) => capabilityCovers(p, cap))) add('requires.not-allowed', `${at}/requires/${j}`, `capability ${JSON.stringify(cap)} is not in /spec/requires`);
  });
  switch (node.uses) {
    case 'core.condition@1': {
      if (!('left' in inputs)) add('node.inputs-missing', `${at}/inputs`, 'a condition needs an input named "left"');
      if (binaryOperators.has(config.operator) && !('right' in inputs)) add('node.inputs-missing', `${at}/inputs`, `operator ${JSON.stringify(config.operator)} needs an input named "right"`);
      if (config.operator !== undefined && !(conditionOperators as readonly string[]).includes(config.operator)) return;
      break;
    }
    case 'core.script@1': {
      if (typeof config.source === 'string') {
        const problem = checkSyntax(config.source);
        if (problem) add('script.syntax', `${at}/config/source`, problem.line ? `line ${problem.line}: ${problem.message}` : problem.message);
      }
      break;
    }
    case 'core.foreach@1': {
      if (!('items' in inputs)) add('node.inputs-missing', `${at}/inputs`, 'a foreach needs an input named "items" (an array)');
      if (config.body?.uses === 'core.script@1' && typeof config.body.config?.source === 'string') {
        const problem = checkSyntax(config.body.config.source);
        if (problem) add('script.syntax', `${at}/config/body/config/source`, problem.line ? `line ${problem.line}: ${problem.message}` : problem.message);
      }
      break;
    }
    default:
      break;
  }
  if (node.uses === 'core.start@1' && Object.keys(inputs).length > 0) add('node.inputs-unexpected', `${at}/inputs`, 'core.start@1 takes the run input; it has no inputs');
}

// Compile the fixed schemas while the module initialises: that happens once, at build time, in
// the component's snapshot, instead of in the first validation of every process.
compileSchema(templateSchema);
for (const definition of nodeDefinitions.values()) compileSchema(definition.configSchema);
