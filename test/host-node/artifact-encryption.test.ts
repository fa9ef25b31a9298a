// Artifacts sealed at rest (`capture.encryptArtifacts` with a host key provider), on SQLite and
// PostgreSQL: the stored bytes are an envelope, runs and recorded replay read them back, exports
// carry them sealed (opened by WebCrypto with the key, as the browser page does), rotation
// re-wraps them under a new key, and a host without the key cannot read them.
import BetterSqlite3 from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowRuntime, type RuntimeOptions } from '../../dist/hosts/node/index.js';
import { artifactKeys } from '../../dist/hosts/node/artifacts/codec.js';
import { isSealed, splitSealed } from '../../dist/hosts/core/sealed-artifact.js';
import { openExportArtifacts, sealedKeyIds } from '../../dist/hosts/core/export-format.js';
import { runCli } from '../helpers/cli.js';
import { chain, tempDir } from '../helpers/node-host.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';

const schema = testSchema('adw_sealed');
const k1 = randomBytes(32);
const k2 = randomBytes(32);
const marker = `payload-${randomBytes(6).toString('hex')}`;
const tools = { big: { execute: (input: { tag: string }) => ({ tag: input.tag, marker, filler: 'y'.repeat(300) }) } };
const template = chain('sealed', [{ id: 'call', uses: 'tool.call@1', config: { tool: 'big' }, inputs: { tag: { source: 'input', path: '/tag' } } }], { requires: ['tool:big'] });

const open = (where: Pick<RuntimeOptions, 'dir' | 'store'>, extra: Partial<RuntimeOptions> = {}) =>
  WorkflowRuntime.open({ ...where, log: () => undefined, tools, ...extra, capture: { inlineBytesMax: 8, ...(extra.capture ?? {}) } });

/** The artifacts table as stored: digest and bytes. */
async function storedRows(where: Pick<RuntimeOptions, 'dir' | 'store'>): Promise<{ digest: string; bytes: Uint8Array }[]> {
  if (where.store) {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    const { rows } = await client.query(`SELECT digest, bytes FROM ${new URL(where.store).searchParams.get('schema')}.artifacts`);
    await client.end();
    return rows;
  }
  const db = new BetterSqlite3(join(where.dir!, 'workflow.db'), { readonly: true });
  const rows = db.prepare('SELECT digest, bytes FROM artifacts').all() as { digest: string; bytes: Buffer }[];
  db.close();
  return rows;
}

const saved = process.env.ADW_ARTIFACT_KEYS;
afterEach(() => {
  if (saved === undefined) delete process.env.ADW_ARTIFACT_KEYS;
  else process.env.ADW_ARTIFACT_KEYS = saved;
});

const backends: [string, () => Pick<RuntimeOptions, 'dir' | 'store'>][] = [
  ['SQLite', () => ({ dir: tempDir('adw-sealed-') })],
  ['PostgreSQL', () => ({ dir: tempDir('adw-sealed-'), store: `${pgUrl}?schema=${schema}_${randomBytes(3).toString('hex')}` })],
];

describe('artifact encryption', () => {
  for (const [name, base] of backends) {
    it(`${name}: seals at rest, replays, exports sealed, rotates to a new key, and refuses a host without it`, async () => {
      const where = base();
      const first = await open(where, { artifactKeys: artifactKeys({ current: 'k1', keys: { k1 } }), capture: { encryptArtifacts: true } });
      let runId: string;
      let digest: string;
      try {
        const outcome = await (await first.launch({ type: 'inline', template }, { input: { tag: 'a' } })).settled();
        expect(outcome.status).toBe('completed');
        runId = outcome.runId;
        const events = (await first.readEvents(runId, { limit: 100 })).events;
        digest = events.find((e) => e.type === 'capability.completed')!.payload.artifact.digest;
        expect((await first.replay(runId, { mode: 'recorded' })).identical).toBe(true);

        // The export carries the envelope; WebCrypto opens it with the key and nothing else.
        const exported = await first.exportRun(runId);
        expect(exported.artifacts[digest]).toMatchObject({ sealed: true });
        expect(Buffer.from(exported.artifacts[digest]!.base64, 'base64').includes(marker)).toBe(false);
        expect(sealedKeyIds(exported)).toEqual(['k1']);
        const opened = await openExportArtifacts(exported, (kid) => (kid === 'k1' ? k1 : undefined));
        expect(Buffer.from(opened.artifacts[digest]!.base64, 'base64').toString()).toContain(marker);
        await expect(openExportArtifacts(exported, () => k2)).rejects.toMatchObject({ code: 'artifact.open-failed' });
        await expect(openExportArtifacts(exported, () => undefined)).rejects.toMatchObject({ code: 'artifact.key-missing' });
      } finally {
        await first.close();
      }
      const [row] = await storedRows(where);
      expect(row!.digest).toBe(digest);
      expect(isSealed(row!.bytes)).toBe(true);
      expect(splitSealed(row!.bytes).header.kid).toBe('k1');
      expect(Buffer.from(row!.bytes).includes(marker)).toBe(false);

      // Rotation: k2 is current, k1 still readable; afterwards k2 alone reads everything.
      const rotating = await open(where, { artifactKeys: artifactKeys({ current: 'k2', keys: { k2, k1 } }), capture: { encryptArtifacts: true } });
      try {
        expect(await rotating.artifacts.rotateKeys({ dryRun: true })).toMatchObject({ dryRun: true, currentKey: 'k2', examined: 1, rewrapped: 1 });
        expect(await rotating.artifacts.rotateKeys()).toMatchObject({ dryRun: false, examined: 1, rewrapped: 1, raced: 0 });
        expect(await rotating.artifacts.rotateKeys()).toMatchObject({ examined: 1, rewrapped: 0, unchanged: 1 });
      } finally {
        await rotating.close();
      }
      const [rotated] = await storedRows(where);
      expect(splitSealed(rotated!.bytes).header.kid).toBe('k2');
      // The content was not re-encrypted: the same ciphertext under a re-wrapped data key.
      expect(Buffer.from(splitSealed(rotated!.bytes).content).equals(Buffer.from(splitSealed(row!.bytes).content))).toBe(true);

      const onlyK2 = await open(where, { artifactKeys: artifactKeys({ current: 'k2', keys: { k2 } }) });
      try {
        expect((await onlyK2.replay(runId, { mode: 'recorded' })).identical).toBe(true);
      } finally {
        await onlyK2.close();
      }
      delete process.env.ADW_ARTIFACT_KEYS;
      const keyless = await open(where);
      try {
        await expect(keyless.replay(runId, { mode: 'recorded' })).rejects.toMatchObject({ code: 'artifact.key-missing' });
      } finally {
        await keyless.close();
      }
    });
  }

  it('needs a key provider to seal, and well-formed keys', async () => {
    delete process.env.ADW_ARTIFACT_KEYS;
    await expect(open({ dir: tempDir('adw-sealed-') }, { capture: { encryptArtifacts: true } })).rejects.toMatchObject({ code: 'policy.unsupported' });
    expect(() => artifactKeys({ current: 'k1', keys: { k1: randomBytes(16) } })).toThrow(expect.objectContaining({ code: 'artifact.bad-key' }));
    expect(() => artifactKeys({ current: 'k9', keys: { k1 } })).toThrow(expect.objectContaining({ code: 'artifact.bad-key' }));
  });

  it('from the command line: ADW_ARTIFACT_KEYS seals, rotates and opens an export for replay', async () => {
    const dir = tempDir('adw-sealed-');
    process.env.ADW_ARTIFACT_KEYS = `k1:${k1.toString('base64')}`;
    const rt = await open({ dir }, { capture: { encryptArtifacts: true } });
    const outcome = await (await rt.launch({ type: 'inline', template }, { input: { tag: 'cli' } })).settled();
    await rt.close();

    process.env.ADW_ARTIFACT_KEYS = `k2:${k2.toString('base64')},k1:${k1.toString('base64')}`;
    const rotated = await runCli(['artifacts', 'rotate', '--dir', dir]);
    expect(rotated.code).toBe(0);
    expect(rotated.out[0]).toMatchObject({ kind: 'RotationReport', currentKey: 'k2', rewrapped: 1 });
    const exported = await runCli(['export', outcome.runId, '--dir', dir]);
    const file = join(dir, 'run.json');
    writeFileSync(file, exported.stdout);

    process.env.ADW_ARTIFACT_KEYS = `k2:${k2.toString('base64')}`;
    const replayed = await runCli(['replay', '--from', file, '--mode', 'recorded']);
    expect(replayed.code).toBe(0);
    expect(replayed.out[0]).toMatchObject({ identical: true });

    delete process.env.ADW_ARTIFACT_KEYS;
    const withoutKeys = await runCli(['artifacts', 'rotate', '--dir', dir]);
    expect(withoutKeys.code).toBe(2);
    expect(withoutKeys.stderr).toContain('artifact.no-keys');
  });
});
