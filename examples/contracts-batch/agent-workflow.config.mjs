// Host module of the contracts-batch example: an offline clause extractor.
export default {
  dir: '../../.agent-workflow',
  dependencies: './workflows',
  tools: {
    'extract-clauses': {
      readOnly: true,
      execute: ({ text }) => ({ clauses: (text.split('Clauses:')[1] ?? '').split(';').map((c) => c.trim().replace(/\.$/, '')).filter(Boolean) }),
    },
  },
};
