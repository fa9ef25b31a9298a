// The agent-research example as a user runs it (a child process on dist/), offline on its mock model.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('examples/agent-research', () => {
  it('answers from the MCP glossary offline', () => {
    const script = fileURLToPath(new URL('../../examples/agent-research/run.mjs', import.meta.url));
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    const out = execFileSync(process.execPath, [script, 'journal'], { env, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ status: 'completed', output: { answer: 'journal: The append-only record of every event of a run, from which its state is rebuilt.' } });
  });
});
