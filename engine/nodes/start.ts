// `core.start@1`: where a run begins; its output is the run input.
import type { NodeKind } from './kind.js';
import { noConfig } from './schemas.js';

export const start: NodeKind = {
  uses: 'core.start@1',
  label: 'start',
  role: 'start',
  configSchema: noConfig,
  implementationDigest: 'builtin:core.start@1:1',
  validate(node, check) {
    if (Object.keys(check.inputs).length > 0) check.add('node.inputs-unexpected', `${check.at}/inputs`, 'core.start@1 takes the run input; it has no inputs');
  },
  start(a, spec, attempt) {
    a.emit('node.started', {}, { id: spec.id, attempt });
    a.settle.commitOutput(a, spec.id, a.run.input);
  },
};
