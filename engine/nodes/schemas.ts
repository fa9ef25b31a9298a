// Schema parts that more than one node kind's `config` uses. Their text is part of the node
// definition set's hash (see compiler/plan.ts): a change here changes every pinned plan's hash.
import { portableIdSource } from '../protocol/ids.js';

/** The `config` of a kind that takes none. */
export const noConfig = { type: 'object', additionalProperties: false };

export const portableId = { type: 'string', pattern: `^${portableIdSource}$` };
export const capabilityName = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$' };

// Secrets never appear in a template: a node names an opaque reference that the gateway resolves
// at call time.
export const secretRefs = { credentialRef: portableId, connectionRef: portableId };

export const workflowRef = {
  type: 'object',
  required: ['id', 'revision'],
  additionalProperties: false,
  properties: { id: portableId, revision: { type: 'integer', minimum: 1 } },
};
