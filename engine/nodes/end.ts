// `core.end@1`: where a run may end; its output is its inputs (the run output, unless the
// template declares `outputs`).
import { resolveInputs } from '../runtime/bindings.js';
import type { NodeKind } from './kind.js';
import { noConfig } from './schemas.js';

export const end: NodeKind = {
  uses: 'core.end@1',
  label: 'end',
  role: 'end',
  configSchema: noConfig,
  implementationDigest: 'builtin:core.end@1:1',
  start(a, spec, attempt) {
    a.emit('node.started', {}, { id: spec.id, attempt });
    a.settle.commitOutput(a, spec.id, resolveInputs(spec.inputs, a.run));
  },
};
