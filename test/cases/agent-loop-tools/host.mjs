// A scripted model (a pure function of the turn it is asked for) that calls two tools and a
// third it is not allowed, answers once against its schema and once right.
const usage = (turn) => ({ inputTokens: 40 * turn, outputTokens: 10 });
const resultOf = (messages, name) => messages.find((m) => m.role === 'tool' && m.toolName === name)?.output;

export default {
  tools: {
    weather: { readOnly: true, description: 'The weather of a city', execute: (input) => ({ city: input.city, celsius: 21.5 }) },
    adder: { idempotent: true, execute: (input) => ({ sum: input.numbers.reduce((a, b) => a + b, 0) }) },
  },
  skills: (name) => (name === 'terse' ? { text: 'Answer with JSON only.' } : undefined),
  models: {
    scripted: {
      generate(input) {
        const question = JSON.parse(input.messages[0].content);
        if (input.turn === 1) {
          const seen = `tools ${input.tools.map((t) => t.name + (t.description ? ` (${t.description})` : '')).join(', ')}; skills ${(input.skillTexts ?? []).map((s) => `${s.name}: ${s.text}`).join(', ')}`;
          return {
            text: seen,
            toolCalls: [
              { id: 'call-1', name: 'weather', input: { city: question.city } },
              { id: 'call-2', name: 'adder', input: { numbers: question.numbers } },
              { id: 'call-3', name: 'erase', input: { all: true } },
            ],
            usage: usage(1),
            finishReason: 'tool-calls',
          };
        }
        const celsius = resultOf(input.messages, 'weather').celsius;
        const sum = resultOf(input.messages, 'adder').sum;
        // The first answer has the sum as text: the schema sends it back.
        const answer = input.turn === 2 ? { celsius, sum: String(sum) } : { celsius, sum };
        return { text: JSON.stringify(answer), toolCalls: [], usage: usage(input.turn), finishReason: 'stop' };
      },
    },
  },
};
