// The replay page tells a person what they need without reading JSON: the header counts
// invocations, labels fit their nodes, times are dated date-times, a run that needs attention
// says the exact `resolve` command, and a divergence shows the recorded and replayed values side
// by side. Exports are made with the built SDK; the page runs in Chromium.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveReplay, type ReplayServer } from '../../dist/hosts/browser/serve.js';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { artifactKeys } from '../../dist/hosts/node/artifacts/codec.js';
import { chain, openRuntime } from '../helpers/node-host.js';
import { openReplayPage, launchChromium, openFile, replayInPage, writeJson } from './page-driver.js';

const chargeId = 'charge-the-customer-card-for-order';

let work: string;
let browser: Browser;
let server: ReplayServer;
let page: Page;
let problems: string[];
let attention: { file: string; runId: string; export: any };
let tampered: { file: string; export: any };
let sealed: { file: string; key: Buffer; marker: string };

/** A run whose large tool result is sealed at rest; its export carries the envelope. */
async function sealedExport(): Promise<typeof sealed> {
  const key = randomBytes(32);
  const marker = `confidential-${randomBytes(4).toString('hex')}`;
  const rt = await openRuntime({ tools: { report: () => ({ marker, body: 'z'.repeat(400) }) }, artifactKeys: artifactKeys({ current: 'ops-2026', keys: { 'ops-2026': key } }), capture: { encryptArtifacts: true, inlineBytesMax: 64 } });
  try {
    const t = chain('sealed-report', [{ id: 'report', uses: 'tool.call@1', config: { tool: 'report' } }]);
    t.spec.requires = ['tool:report'];
    const handle = await rt.launch(t);
    expect((await handle.result).status).toBe('completed');
    return { file: writeJson(join(work, 'sealed.json'), await rt.exportRun(handle.runId)), key, marker };
  } finally {
    await rt.close();
  }
}

/** A run whose non-idempotent charge timed out: the node needs attention, the run is paused. */
async function needsAttentionExport(): Promise<typeof attention> {
  const rt = await openRuntime({ tools: { charge: () => new Promise(() => undefined) } });
  try {
    const t = chain('checkout', [{ id: chargeId, uses: 'tool.call@1', config: { tool: 'charge' }, timeoutMs: 100 }]);
    t.spec.requires = ['tool:charge'];
    const handle = await rt.launch(t);
    expect(await handle.settled()).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
    const exported = await rt.exportRun(handle.runId);
    return { file: writeJson(join(work, 'needs-attention.json'), exported), runId: handle.runId, export: exported };
  } finally {
    await rt.close();
  }
}

/** A quote doubled by a script, with the recorded quote changed afterwards: recorded replay diverges. */
async function tamperedExport(): Promise<typeof tampered> {
  const rt = await openRuntime({ tools: { quote: () => ({ price: 10 }) } });
  try {
    const t = chain('quote', [
      { id: 'quote', uses: 'tool.call@1', config: { tool: 'quote' } },
      { id: 'double', uses: 'core.script@1', config: { source: 'return { total: input.p * 2 }' }, inputs: { p: { source: 'output', nodeId: 'quote', path: '/price' } } },
    ]);
    t.spec.requires = ['tool:quote'];
    const handle = await rt.launch(t);
    expect((await handle.result).status).toBe('completed');
    const exported = await rt.exportRun(handle.runId);
    const completed = exported.events.find((e: any) => e.type === 'capability.completed');
    completed.payload.output = { price: 11 };
    return { file: writeJson(join(work, 'tampered.json'), exported), export: exported };
  } finally {
    await rt.close();
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'adw-mends-'));
  [browser, server] = await Promise.all([launchChromium(), serveReplay()]);
  attention = await needsAttentionExport();
  tampered = await tamperedExport();
  sealed = await sealedExport();
  ({ page, problems } = await openReplayPage(browser, server.url, { width: 1400, height: 1000 }));
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('browser page: what a person reads', () => {
  it('the header counts unknown outcomes by invocation: one abandoned call is "1 unknown outcome"', async () => {
    await openFile(page, attention.file);
    const unknownEvents = attention.export.events.filter((e: any) => e.type === 'node.needs-attention' || e.type === 'capability.abandoned');
    expect(unknownEvents.length).toBeGreaterThan(1); // two events, one invocation
    const flags = await page.$$eval('#run-flags .flag', (spans) => spans.map((s) => s.textContent));
    expect(flags).toContain('1 unknown outcome');
    expect(flags.join(' ')).not.toMatch(/\b2 unknown/);
    expect(problems).toEqual([]);
  });

  it('a run that needs attention shows the exact resolve commands', async () => {
    await openFile(page, attention.file);
    const hint = await page.textContent('#next-step');
    expect(hint).toContain(`agent-workflow resolve ${attention.runId} ${chargeId} --retry`);
    expect(hint).toContain(`agent-workflow resolve ${attention.runId} ${chargeId} --succeeded '<output JSON>'`);
    expect(hint).toContain(`agent-workflow resolve ${attention.runId} ${chargeId} --fail '<reason>'`);
  });

  it('node labels and state pills fit their boxes and do not overlap', async () => {
    await openFile(page, attention.file);
    const boxes = await page.$$eval('#dag g.node', (gs) =>
      gs.map((g) => {
        const bbox = (selector: string) => {
          const r = (g.querySelector(selector) as SVGGraphicsElement).getBBox();
          return { x: r.x, y: r.y, width: r.width, height: r.height };
        };
        const box = bbox('.node-box');
        const id = bbox('.node-id');
        const uses = bbox('.node-uses');
        const pill = bbox('.node-pill');
        const pillText = bbox('.node-pill-text');
        return { node: g.getAttribute('data-node'), status: g.getAttribute('data-status'), idText: g.querySelector('.node-id')!.textContent, box, id, uses, pill, pillText };
      }),
    );
    const charge = boxes.find((b) => b.node === chargeId)!;
    expect(charge.status).toBe('needs-attention');
    // The long id is shortened to fit, with an ellipsis; the full id stays in the title.
    expect(charge.idText!.endsWith('…')).toBe(true);
    for (const b of boxes) {
      const right = b.box.x + b.box.width;
      expect(b.id.x + b.id.width, `${b.node}: id`).toBeLessThanOrEqual(right - 4);
      expect(b.uses.x + b.uses.width, `${b.node}: uses under the pill`).toBeLessThanOrEqual(b.pill.x);
      expect(b.pillText.x, `${b.node}: pill text`).toBeGreaterThanOrEqual(b.pill.x);
      expect(b.pillText.x + b.pillText.width, `${b.node}: pill text`).toBeLessThanOrEqual(b.pill.x + b.pill.width);
      expect(b.pill.x + b.pill.width, `${b.node}: pill`).toBeLessThanOrEqual(right);
    }
  });

  it('journal times are dated date-times, and epoch milliseconds in details are shown as ISO date-times', async () => {
    await openFile(page, attention.file);
    const started = attention.export.events.find((e: any) => e.type === 'node.started' && e.node.id === chargeId);
    const timeoutAt = started.payload.timeoutAt as number;
    expect(typeof timeoutAt).toBe('number');
    const row = page.locator(`#timeline tbody tr[data-seq="${started.seq}"]`);
    const cells = await row.locator('td').allTextContents();
    // The time column has the date: 2026-12-01 02:13:18.123 (UTC, from occurredAt).
    expect(cells[1]).toBe(`${started.occurredAt.slice(0, 10)} ${started.occurredAt.slice(11, 23)}`);
    expect(cells[4]).toContain(new Date(timeoutAt).toISOString());
    expect(cells[4]).not.toContain(String(timeoutAt));
    await row.click();
    const detail = (await page.textContent('#event-detail'))!;
    expect(detail).toContain(`"timeoutAt": "${new Date(timeoutAt).toISOString()}"`);
    expect(detail).not.toContain(`"timeoutAt": ${timeoutAt}`);
  });

  it('a divergence shows the recorded and the replayed values side by side', async () => {
    await openFile(page, tampered.file);
    const report = JSON.parse(await replayInPage(page, 'recorded'));
    expect(report.identical).toBe(false);
    const d = report.firstDivergence;
    const rows = await page.$$eval('#divergence tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    expect(rows.length).toBeGreaterThan(0);
    // Every row is a path whose values differ; together they are the whole difference.
    const at = (value: any, path: string) => path.split('.').reduce((v, k) => (v === undefined || v === null ? undefined : v[k]), value);
    for (const [path, recorded, replayed] of rows) {
      expect(recorded).not.toBe(replayed);
      expect(recorded).toBe(JSON.stringify(at(d.recorded, path!)) ?? '(absent)');
      expect(replayed).toBe(JSON.stringify(at(d.replayed, path!)) ?? '(absent)');
    }
    expect(await page.$$eval('#divergence thead th', (ths) => ths.map((t) => t.textContent))).toEqual([`event ${d.seq}`, 'recorded', 'replayed']);
  });

  it('a sealed export inspects as it is, and replays recorded once the person gives its key in the page', async () => {
    const sealedArtifacts = Object.values(JSON.parse(readFileSync(sealed.file, 'utf8')).artifacts) as { base64: string; sealed?: true }[];
    expect(sealedArtifacts.map((a) => [a.sealed, Buffer.from(a.base64, 'base64').includes(sealed.marker)])).toEqual([[true, false]]);
    await openFile(page, sealed.file);
    await expect.poll(() => page.isVisible('#artifact-key')).toBe(true);
    expect(await page.textContent('#artifact-key-info')).toContain('1 artifact is sealed under key ops-2026');
    expect(JSON.parse(await replayInPage(page, 'inspect'))).toMatchObject({ outcome: { status: 'completed' } });

    await page.fill('#artifact-key-input', randomBytes(32).toString('base64'));
    await page.click('#artifact-key button');
    await expect.poll(() => page.textContent('#status')).toContain('did not open');

    const before = await page.evaluate(() => Number(document.body.dataset.loads ?? 0));
    await page.fill('#artifact-key-input', sealed.key.toString('base64'));
    await page.click('#artifact-key button');
    await page.waitForFunction((n) => Number(document.body.dataset.loads ?? 0) > n, before);
    expect(await page.isVisible('#artifact-key')).toBe(false);
    expect(JSON.parse(await replayInPage(page, 'recorded'))).toMatchObject({ identical: true });
  });
});
