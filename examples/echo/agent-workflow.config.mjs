// Host module of the echo example: one idempotent tool that returns its input.
export default {
  dir: '../../.agent-workflow',
  tools: {
    echo: { idempotent: true, execute: (input) => ({ text: input.text }) },
  },
};
