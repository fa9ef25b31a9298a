// CLI processes on one state directory with the live tests' host module.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, start, type World } from '../ownership/helpers.js';

import { template } from '../ownership/helpers.js';
export { template, until, writeTemplate } from '../ownership/helpers.js';

/** A run that pauses for an approval of `gate`, then calls the echo tool and ends. */
export function gatedTemplate(id: string) {
  return template(
    id,
    [
      { id: 'gate', uses: 'human.approval@1', config: { prompt: 'go?' } },
      { id: 'after', uses: 'tool.call@1', config: { tool: 'echo' } },
    ],
    [
      ['start', 'gate'],
      ['gate', 'after'],
      ['after', 'end'],
    ],
    { requires: ['approval', 'tool:echo'] },
  );
}

const hostModule = new URL('./fixtures/host.mjs', import.meta.url).pathname;

export function liveWorld(env: Record<string, string> = {}): World {
  const dir = mkdtempSync(join(tmpdir(), 'adw-live-'));
  const state = join(dir, 'state');
  return { dir, state, effectsLog: '', hostModule, env: { STATE_DIR: state, GATE_FILE: join(dir, 'gate.open'), ...env } };
}

export const startCli = start;
export const runCli = run;

/** JSON lines of a command's stdout. */
export function jsonLines(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}
