export default { agents: { classifier: (input) => ({ label: input.text.includes('crash') ? 'bug' : 'feature', confidence: 0.9 }) } };
