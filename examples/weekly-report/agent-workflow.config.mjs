// Host module of the weekly-report example. Everything is offline: the tools read fixture files
// next to this module, and the analyst agent is a deterministic stand-in for a model call that
// returns the structured output the template's schema asks for.
import { readFileSync } from 'node:fs';

const data = (name) => JSON.parse(readFileSync(new URL(`./data/${name}.json`, import.meta.url), 'utf8'));

function analyst({ leaderboard, releases, mentions }) {
  const released = new Map(releases.map((r) => [r.name, r.kind]));
  const boost = { major: 4, minor: 2, patch: 0.5 };
  const models = leaderboard.map((m) => {
    const buzz = mentions[m.name] ?? 0;
    const release = released.get(m.name);
    const score = Math.round(Math.min(100, m.benchmark + (release ? boost[release] : 0) + Math.log10(1 + buzz)) * 10) / 10;
    const momentum = release === 'major' || buzz > 1000 ? 'rising' : buzz < 300 ? 'cooling' : 'steady';
    const note = `${m.benchmark} on the leaderboard${release ? `, ${release} release this week` : ''}, ${buzz} mentions`;
    return { name: m.name, vendor: m.vendor, score, momentum, note };
  });
  return { models };
}

export default {
  dir: '../../.agent-workflow',
  tools: {
    leaderboard: { readOnly: true, execute: () => data('leaderboard') },
    releases: { readOnly: true, execute: () => data('releases') },
    community: { readOnly: true, execute: () => data('community') },
  },
  agents: {
    analyst: { run: (input) => analyst(input) },
  },
};
