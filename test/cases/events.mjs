// The part of a case's events that every host and every run must reproduce exactly, as
// `events.json` holds it. What a run cannot reproduce is taken out or made relative:
//
// | field                                      | in `events.json`                                         |
// | ------------------------------------------ | -------------------------------------------------------- |
// | schemaVersion, eventId, runId, occurredAt  | left out (ids derive from the random run id; wall clock) |
// | workflow (engine version, hashes)          | left out (changes with every engine or definition edit)  |
// | origin (actor, activation number)          | left out (how a host batches facts into activations)     |
// | seq                                        | the position in the list                                 |
// | node.id, node.attempt, node.item           | `node`, `attempt`, `item`                                |
// | node.invocationId, payload.invocationId    | `node#attempt`, `node[item]#attempt` (`node@2[item]#...` |
// |                                            | in the node's second attempt): the name first announced; |
// |                                            | more calls in one attempt (an agent loop) `….2`, `….3`   |
// | payload.planHash                           | left out (a digest of the plan, engine version included) |
// | payload.retryAt, timeoutAt, deadlineAt     | `+<ms>`: milliseconds after the event's own occurredAt   |
// | everything else in the payload             | as journaled                                             |

const relativeTimes = ['retryAt', 'timeoutAt', 'deadlineAt'];
const dropped = ['planHash'];

/**
 * Each event of one run (envelopes in seq order) as `events.json` compares it. Throws when the
 * journal has a gap or names an invocation before any event announced it.
 */
export function comparableEvents(events) {
  const names = new Map();
  const taken = new Set();
  const nodeAttempts = new Map();
  const nameOf = (id) => {
    const name = names.get(id);
    if (name === undefined) throw new Error(`invocation ${id} appears before an event announced it`);
    return name;
  };
  return events.map((e, i) => {
    if (e.seq !== i + 1) throw new Error(`event ${i} has seq ${e.seq}`);
    const out = { type: e.type };
    if (e.node) {
      if (e.type === 'node.started') nodeAttempts.set(e.node.id, e.node.attempt);
      out.node = e.node.id;
      out.attempt = e.node.attempt;
      if (e.node.item !== undefined) out.item = e.node.item;
      if (e.node.invocationId !== undefined) {
        if (!names.has(e.node.invocationId)) {
          const nodeAttempt = nodeAttempts.get(e.node.id) ?? 1;
          const item = `${e.node.id}${nodeAttempt > 1 ? `@${nodeAttempt}` : ''}[${e.node.item}]`;
          const base = e.node.item === undefined ? `${e.node.id}#${e.node.attempt}` : `${item}#${e.node.attempt}`;
          // An agent loop makes many calls in one attempt: the second is `base.2`, and so on.
          let name = base;
          for (let k = 2; taken.has(name); k++) name = `${base}.${k}`;
          taken.add(name);
          names.set(e.node.invocationId, name);
        }
        out.invocation = nameOf(e.node.invocationId);
      }
    }
    const at = Date.parse(e.occurredAt);
    const payload = {};
    for (const [key, value] of Object.entries(e.payload ?? {})) {
      if (dropped.includes(key)) continue;
      if (key === 'invocationId' && typeof value === 'string') payload[key] = nameOf(value);
      else if (relativeTimes.includes(key) && typeof value === 'number') payload[key] = `+${value - at}`;
      else payload[key] = value;
    }
    out.payload = payload;
    return out;
  });
}

/** `events.json`: one event a line, so a diff shows which event changed. */
export function formatEvents(events) {
  return `[\n${events.map((e) => `  ${JSON.stringify(e)}`).join(',\n')}\n]\n`;
}
