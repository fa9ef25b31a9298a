// A tool that echoes its resolved credential in its progress, its output and its error message:
// the secret reaches none of the places a run is written or shown — the live view's progress,
// the journal and the run's export, the SQLite file and its WAL, and the spans folded from the
// journal.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { LiveItem } from '../../dist/hosts/node/index.js';
import { RunSpanBuilder } from '../../dist/hosts/node/observe/trace-spans.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

const secret = 'sk-live-7f3a9c2e51d84b06';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

it('scrubs a resolved credential from progress, output, error, store, WAL, export and spans', async () => {
  const dir = tempDir();
  // Each call waits until the live subscriber has read its request, so its progress is seen.
  let release = () => {};
  let held = Promise.resolve();
  const hold = () => (held = new Promise<void>((r) => (release = r)));
  const rt = await openRuntime({
    dir,
    credentials: () => ({ credential: secret }),
    tools: {
      leak: async (_input: unknown, ctx: { credential?: unknown; progress?: (d: unknown) => void }) => {
        await held;
        ctx.progress?.({ note: `calling with ${String(ctx.credential)}`, [String(ctx.credential)]: 1 });
        return { token: ctx.credential };
      },
      fail: async (_input: unknown, ctx: { credential?: unknown; progress?: (d: unknown) => void }) => {
        await held;
        ctx.progress?.(`retrying with ${String(ctx.credential)}`);
        throw new Error(`auth failed for token ${String(ctx.credential)}`);
      },
    },
  });
  const shown: string[] = [];
  const progress: unknown[] = [];
  try {
    for (const tool of ['leak', 'fail']) {
      const t = chain(`echo-${tool}`, [{ id: 'call', uses: 'tool.call@1', config: { tool, credentialRef: 'billing' } }]);
      t.spec.requires = [`tool:${tool}`];
      t.spec.outputs = { out: { source: 'output', nodeId: 'call' } };
      hold();
      const handle = await rt.launch(t);
      const items: LiveItem[] = [];
      for await (const item of handle.live()) {
        items.push(item);
        if (item.kind === 'event' && item.event.type === 'capability.requested') setImmediate(release);
      }
      progress.push(...items.filter((i) => i.kind === 'progress').map((i) => (i as { data: unknown }).data));
      shown.push(JSON.stringify(items), JSON.stringify(await handle.result));
      const exported = await rt.exportRun(handle.runId);
      shown.push(JSON.stringify(exported));
      const spans = new RunSpanBuilder(handle.runId, sha256);
      shown.push(JSON.stringify(exported.events.flatMap((e: any) => spans.add(e))));
    }
  } finally {
    await rt.close();
  }
  expect(progress).toEqual([{ note: 'calling with [redacted]', '[redacted]': 1 }, 'retrying with [redacted]']);
  expect(shown.length).toBe(8);
  for (const text of shown) expect(text.includes(secret)).toBe(false);
  expect(shown.some((text) => text.includes('auth failed for token [redacted]'))).toBe(true);
  const files = readdirSync(dir).map((f) => join(dir, f));
  for (const f of files) expect(readFileSync(f).includes(secret), `${f} holds the credential`).toBe(false);
});
