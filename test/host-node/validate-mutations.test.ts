// Validation of a template that is wrong anywhere: every member of every test/cases template is
// replaced by a value of another type, or taken out, and the component's `validate` must answer
// with typed errors only. An `engine.*` error (a fault inside the engine, such as a TypeError on
// a member of an unexpected type) is a bug: the user gets no pointer to what is wrong.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scriptlessEngine } from '../helpers/node-host.js';

const casesDir = fileURLToPath(new URL('../cases/', import.meta.url));
const replacements: unknown[] = [null, 7, 'x', [], {}, ['x']];

/** Every path to a member of `value`, the root excluded. */
function pathsOf(value: unknown, at: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [];
  return Object.keys(value).flatMap((k) => [[...at, k], ...pathsOf((value as Record<string, unknown>)[k], [...at, k])]);
}

/** `value` with the member at `path` set to `to`, or taken out when `to` is `remove`. */
function mutated(value: unknown, path: string[], to: unknown, remove: boolean): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  let parent = copy as Record<string, unknown> | unknown[];
  for (const k of path.slice(0, -1)) parent = (parent as Record<string, unknown>)[k] as Record<string, unknown>;
  const last = path[path.length - 1];
  if (!remove) (parent as Record<string, unknown>)[last] = to;
  else if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else delete parent[last];
  return copy;
}

describe('validation of templates wrong anywhere', () => {
  it('answers every mutation of every test/cases template with typed errors, never an engine fault', async () => {
    const engine = await scriptlessEngine();
    const names = readdirSync(casesDir).filter((n) => existsSync(`${casesDir}${n}/template.json`));
    expect(names.length).toBeGreaterThan(10);
    const faults: string[] = [];
    let checked = 0;
    let refused = 0;
    for (const name of names) {
      const template = JSON.parse(readFileSync(`${casesDir}${name}/template.json`, 'utf8')) as unknown;
      for (const path of pathsOf(template)) {
        for (const [to, remove] of [...replacements.map((r) => [r, false] as const), [undefined, true] as const]) {
          const report = engine.validate(JSON.stringify(mutated(template, path, to, remove)));
          checked += 1;
          if (!report.ok) refused += 1;
          for (const e of report.errors) if (e.code.startsWith('engine.')) faults.push(`${name} /${path.join('/')} ${remove ? 'removed' : JSON.stringify(to)}: ${e.code} ${e.message}`);
        }
      }
    }
    expect(faults).toEqual([]);
    // The mutations are real: most of them make a template invalid.
    expect(checked).toBeGreaterThan(3000);
    expect(refused / checked).toBeGreaterThan(0.5);
  }, 120_000);
});
