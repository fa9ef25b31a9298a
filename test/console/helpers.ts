// A state directory, a real `agent-workflow serve --http` on loopback over it with an operator and
// a read-only token, and the templates the console tests run.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, start, template, until, writeTemplate, type World } from '../ownership/helpers.js';
import { jsonLines } from '../live/helpers.js';

export { run, template, until, writeTemplate, jsonLines };

export const operatorToken = 'console-operator-token';
export const readonlyToken = 'console-readonly-token';
/** Named operator tokens: each person's own (`--http-operators-file`). */
export const aliceToken = 'console-alice-token-0001';
export const bobToken = 'console-bob-token-00002';

export function consoleWorld(): World {
  const dir = mkdtempSync(join(tmpdir(), 'adw-console-'));
  const state = join(dir, 'state');
  return { dir, state, effectsLog: '', hostModule: new URL('./fixtures/host.mjs', import.meta.url).pathname, env: { STATE_DIR: state } };
}

export interface Served {
  base: string;
  stop(): Promise<void>;
}

/** `serve --http 0` with both token files; resolves once it listens. */
export async function serveHttp(w: World, extra: string[] = []): Promise<Served> {
  writeFileSync(join(w.dir, 'operator.token'), `${operatorToken}\n`);
  writeFileSync(join(w.dir, 'readonly.token'), `${readonlyToken}\n`);
  writeFileSync(join(w.dir, 'operators'), `# the on-call rota\nalice ${aliceToken}\nbob   ${bobToken}\n`);
  const server = start(w, ['serve', '--http', '0', '--http-token-file', join(w.dir, 'operator.token'), '--http-readonly-token-file', join(w.dir, 'readonly.token'), '--http-operators-file', join(w.dir, 'operators'), ...extra]);
  const serving = await until('the server to listen', () => jsonLines(server.out()).find((l) => l.kind === 'Serving'), 30_000);
  return {
    base: serving.http as string,
    stop: async () => {
      server.child.kill('SIGTERM');
      await server.done;
    },
  };
}

/** A run that pauses for an approval of `gate`, then calls echo and ends. */
export const gated = template(
  'gated',
  [
    { id: 'gate', uses: 'human.approval@1', config: { prompt: 'Ship the release?' } },
    { id: 'after', uses: 'tool.call@1', config: { tool: 'echo' } },
  ],
  [
    ['start', 'gate'],
    ['gate', 'after'],
    ['after', 'end'],
  ],
  { requires: ['approval', 'tool:echo'] },
);

/** A run whose `charge` call never answers within its limit: the node needs attention. */
export const charge = template(
  'charge',
  [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'hang' }, timeoutMs: 200 }],
  [
    ['start', 'charge'],
    ['charge', 'end'],
  ],
  { requires: ['tool:hang'], outputs: { receipt: { source: 'output', nodeId: 'charge' } } },
);

export const quick = template('quick', [{ id: 'say', uses: 'tool.call@1', config: { tool: 'echo' } }], [
  ['start', 'say'],
  ['say', 'end'],
], { requires: ['tool:echo'] });

/** Queues a run (`run --no-wait`) for the server's worker; its id. */
export async function queue(w: World, name: string, t: unknown, input: unknown = {}): Promise<string> {
  const queued = await run(w, ['run', writeTemplate(w, name, t), '--no-wait', '--input', JSON.stringify(input)]);
  if (queued.code !== 0) throw new Error(`run --no-wait exited ${queued.code}: ${queued.stdout}${queued.stderr}`);
  return jsonLines(queued.stdout).at(-1).runId as string;
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** A run's view through the API. */
export async function runStatus(base: string, runId: string): Promise<{ status: string; pausedReason?: string; lastSeq: number }> {
  return (await fetch(`${base}/v1/runs/${encodeURIComponent(runId)}`, { headers: bearer(readonlyToken) })).json();
}
