// Fails on the first attempt, succeeds on the second: attempts are in the tool context.
export default { tools: { flaky: (input, ctx) => { if (ctx.attempt < 2) { const e = new Error('temporarily unavailable'); e.code = 'flaky.unavailable'; throw e; } return { attempt: ctx.attempt }; } } };
