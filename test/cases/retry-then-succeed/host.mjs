// Fails on the first attempt, succeeds on the second: attempts are in the tool context. The error
// says `retryable: true`: a call with an unknown effect is retried only on such a typed error.
export default { tools: { flaky: (input, ctx) => { if (ctx.attempt < 2) { const e = new Error('temporarily unavailable'); e.code = 'flaky.unavailable'; e.retryable = true; throw e; } return { attempt: ctx.attempt }; } } };
