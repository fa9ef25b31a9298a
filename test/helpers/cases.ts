// Loads the host-independent cases of test/cases/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
// @ts-expect-error plain ESM helpers (no declarations)
import { comparableEvents } from '../cases/events.mjs';

export { comparableEvents };

/** One event of `events.json`: what every host must journal, exactly (see test/cases/events.mjs). */
export interface CaseEvent {
  type: string;
  node?: string;
  attempt?: number;
  item?: number;
  invocation?: string;
  payload: Record<string, unknown>;
}

export interface TestCase {
  name: string;
  dir: string;
  template: any;
  input: unknown;
  host: { tools?: Record<string, any>; agents?: Record<string, any>; models?: Record<string, any>; skills?: any; approvals?: any; dependencies?: { template: unknown; revision: number }[] };
  expected: { status: string; output?: unknown; errorCode?: string; pausedReason?: string; eventTypes: string[] };
  /** `events.json`, written by test/cases/record.mjs. */
  events: CaseEvent[];
}

export const casesDir = new URL('../cases/', import.meta.url).pathname;

export function caseNames(): string[] {
  return readdirSync(casesDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(casesDir, d.name, 'template.json')))
    .map((d) => d.name)
    .sort();
}

const json = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

export async function loadCase(name: string): Promise<TestCase> {
  const dir = join(casesDir, name);
  const hostFile = join(dir, 'host.mjs');
  const host = existsSync(hostFile) ? ((await import(pathToFileURL(hostFile).href)).default ?? {}) : {};
  return {
    name,
    dir,
    template: json(join(dir, 'template.json')),
    input: json(join(dir, 'input.json')),
    host,
    expected: json(join(dir, 'expected.json')),
    events: existsSync(join(dir, 'events.json')) ? json(join(dir, 'events.json')) : missingEvents(name),
  };
}

function missingEvents(name: string): never {
  throw new Error(`test/cases/${name} has no events.json: run \`node test/cases/record.mjs ${name}\` (after \`npm run build\`) and review it`);
}
