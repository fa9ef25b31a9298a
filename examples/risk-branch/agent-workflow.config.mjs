// Host module of the risk-branch example: a deterministic offline risk score and a notifier.
export default {
  dir: '../../.agent-workflow',
  tools: {
    'risk-score': {
      readOnly: true,
      execute: ({ applicant, amount }) => ({ score: Math.min(100, Math.round(amount / 5000) + applicant.length) }),
    },
    notify: (input) => ({ delivered: true, to: input.applicant, decision: input.decision }),
  },
};
