// Compaction streams: rewriting a journal of tens of megabytes costs the process a few MiB over
// what opening it costs, whatever the journal's size (before, a 57 MB journal took the process
// from 65 to 92 MiB and its cgroup to 128 MiB: every record was read, concatenated and framed as
// new buffers, garbage that V8 collects late). A real process compacts a ~24 MB journal inside a
// child memory cgroup of 96 MiB (run without one where none can be created).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cgroupMemory, childMemoryCgroup, spawnInCgroup, tempDir, memoryFlags } from './helpers.js';

const { FileJournalStore } = await import('../../dist/hosts/router/index.js');
// @ts-expect-error plain ESM helpers (no declarations)
const { writeJournal } = (await import('./fixtures/write-journal.mjs')) as { writeJournal: (dir: string, bytes: number) => number };

const root = fileURLToPath(new URL('../../', import.meta.url));
const script = path.join(root, 'test/router/fixtures/compact-journal.mjs');
const MiB = 2 ** 20;

describe('router compaction memory', () => {
  it('compacts a ~24 MB journal for a few MiB over what opening it takes', async () => {
    const dir = path.join(tempDir('router-compact-memory-'), 'state');
    const runs = writeJournal(dir, 24 * 1e6);
    const cgroup = childMemoryCgroup('router-compact-test', 96 * MiB);
    if (cgroup.reason) console.log(`compaction memory test runs without a cgroup: ${cgroup.reason}`);
    try {
      const command = [process.execPath, ...memoryFlags, script, dir];
      const child = cgroup.dir
        ? spawnInCgroup(cgroup.dir, command, ['ignore', 'pipe', 'inherit'])
        : spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
      let stdout = '';
      child.stdout!.on('data', (c) => (stdout += c));
      expect(await new Promise((r) => child.on('exit', r))).toBe(0);
      const measured = JSON.parse(stdout);
      const memory = cgroup.dir ? cgroupMemory(cgroup.dir) : undefined;
      console.log(
        `compaction of ${(measured.report.bytesBefore / 1e6).toFixed(1)} MB (${runs} runs) -> ${(measured.report.bytesAfter / 1e6).toFixed(1)} MB: ` +
          `peak RSS ${(measured.openedRss / MiB).toFixed(1)} MiB after open, ${(measured.compactedRss / MiB).toFixed(1)} MiB after compaction` +
          (memory ? `; cgroup peak ${(memory.peakBytes / MiB).toFixed(1)} MiB, failcnt ${memory.failcnt}, oom_kill ${memory.oomKill ?? 'n/a'}` : ''),
      );
      expect(measured.report.runs).toBe(runs);
      expect(measured.compactedRss - measured.openedRss).toBeLessThan(8 * MiB);
      if (memory?.oomKill !== undefined) expect(memory.oomKill).toBe(0);
      const reopened = FileJournalStore.open(dir);
      try {
        expect(reopened.listRuns({ limit: 1000 }).length).toBe(Math.min(runs, 1000));
        expect(reopened.readEvents('run-0', 0, 1000).events).toHaveLength(200);
      } finally {
        reopened.close();
      }
    } finally {
      if (cgroup.dir) fs.rmdirSync(cgroup.dir);
    }
  }, 120_000);
});
