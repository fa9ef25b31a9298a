export default { tools: { fetch: () => ({ rows: [] }) } };
