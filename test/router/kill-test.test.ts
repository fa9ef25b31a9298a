import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { FileJournalStore } from '../../hosts/router/file-journal.js';
import { tempDir } from './helpers.js';

let script = '';
beforeAll(() => {
  script = path.join(tempDir('router-kill-'), 'commit-loop.mjs');
  buildSync({
    entryPoints: [path.join(import.meta.dirname, 'fixtures/commit-loop.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: script,
    logLevel: 'error',
  });
});

/** A small deterministic generator, so a failing seed can be replayed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs the commit loop until it has acknowledged `killAfterAcks` commits, then SIGKILLs it. */
function runAndKill(dir: string, killAfterAcks: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    const acked: Record<string, number> = {};
    let acks = 0;
    let buffered = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [, runId, seq] = line.split(' ');
        acked[runId!] = Number(seq);
        if (++acks === killAfterAcks) child.kill('SIGKILL');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child ended with ${code ?? signal} before the kill: ${stderr}`));
      else resolve(acked);
    });
  });
}

describe('FileJournalStore under SIGKILL', () => {
  const seed = Number(process.env.ROUTER_KILL_SEED ?? Date.now() % 1_000_000);
  it(`keeps a gap-free prefix of the commits of a killed writer (seed ${seed})`, async () => {
    console.log(`router kill test seed: ${seed} (set ROUTER_KILL_SEED to replay)`);
    const random = mulberry32(seed);
    const dir = tempDir('router-kill-state-');
    let previous: Record<string, number> = {};
    for (let iteration = 0; iteration < 6; iteration++) {
      const acked = await runAndKill(dir, 20 + Math.floor(random() * 400));
      const store = FileJournalStore.open(dir);
      try {
        for (const runId of ['k1', 'k2']) {
          const run = store.getRun(runId)!;
          // Every acknowledged commit survived; what survived is complete and gap-free.
          expect(run.lastSeq).toBeGreaterThanOrEqual(acked[runId] ?? 0);
          let after = 0;
          for (;;) {
            const page = store.readEvents(runId, after, 1000);
            page.events.forEach((event, i) => expect(JSON.parse(event)).toMatchObject({ runId, seq: after + i + 1 }));
            after = page.lastSeq;
            if (!page.more) break;
          }
          expect(after).toBe(run.lastSeq);
          const tail = store.load(runId)!;
          expect(tail.lastSeq).toBe(run.lastSeq);
          expect(run.lastSeq).toBeGreaterThan(previous[runId] ?? 0);
          previous = { ...previous, [runId]: run.lastSeq };
        }
        expect(store.openReport.removedTempFiles.length).toBeLessThanOrEqual(1);
      } finally {
        store.close();
      }
      // The next child continues from what survived, with the stored seqs.
    }
  }, 30_000);
});

