// Turns the runner's result document into ratios, a markdown table and an SVG chart.

export const WORKLOADS = [
  { id: 'twoStep', label: '2-step run of no-op steps: end-to-end latency', unit: 'ms', better: 'lower', spread: 'p99' },
  { id: 'hundredStep', label: '100-step sequential run: durable overhead per step (run time / 100)', unit: 'ms/step', better: 'lower', spread: 'p99' },
  { id: 'throughput16', label: '2-step runs per second, 16 in flight', unit: 'runs/s', better: 'higher', spread: 'minmax' },
  { id: 'fanOut1000', label: 'fan-out over 1,000 items, concurrency 10', unit: 'ms', better: 'lower', spread: 'minmax' },
  { id: 'foreach10k', label: 'foreach over 10,000 items, concurrency 10 (fresh process; time and peak RSS)', unit: 'ms', better: 'lower', spread: 'minmax' },
  { id: 'replay10k', label: 'replay of a recorded 10,000-event run', unit: 'events/s', better: 'higher', spread: 'minmax' },
  { id: 'coldStart', label: 'engine cold start (from the start of a fresh Node process to the first completed 2-step run)', unit: 'ms', better: 'lower', spread: 'minmax' },
];

// Targets of the product, checked against the product's row when there is one.
export const TARGETS = [
  { figure: 'durable step overhead, 100-step run', workload: 'hundredStep', key: 'median', op: '<=', value: 0.4, unit: 'ms' },
  { figure: '2-step run latency, p50, launch(template)', workload: 'twoStep', key: 'median', op: '<=', value: 1.0, unit: 'ms' },
  { figure: '2-step runs/s with 16 in flight', workload: 'throughput16', key: 'median', op: '>=', value: 2000, unit: 'runs/s' },
  { figure: 'fan-out of 1,000 items at concurrency 10', workload: 'fanOut1000', key: 'median', op: '<=', value: 100, unit: 'ms' },
  { figure: 'peak RSS of the Node host (foreach)', workload: 'foreach10k', key: 'peakRss', op: '<=', value: 100, unit: 'MB' },
  { figure: 'recorded replay (Node)', workload: 'replay10k', key: 'median', op: '>=', value: 50000, unit: 'events/s' },
  { figure: 'cold start: new process to the first completed 2-step run', workload: 'coldStart', key: 'median', op: '<=', value: 150, unit: 'ms' },
];

/**
 * Targets read from the extra rows (benchmarks of single areas, bench/run.mjs `extraModules`):
 * each picks its figure from the rows of one source and says what bounds it.
 */
export const EXTRA_TARGETS = [
  {
    figure: 'compile of a 4-node template (runtime.compile, steady p50)',
    source: 'bench/compile/bench.mjs',
    pick: (rows) => rows.find((r) => r.section?.startsWith('runtime.compile'))?.p50Ms,
    op: '<=', value: 0.5, unit: 'ms',
    bound: 'the template\'s checks (ajv and the graph, two fifths of it) and hashes interpreted in the guest, in code V8 is still tiering up during the bench\'s 500 compiles (bench/README.md, "Compile: canonical JSON natively, the graph linked once")',
  },
  {
    figure: 'compiled once per template: engine compiles for repeated launch(template)',
    source: 'bench/compile/bench.mjs',
    pick: (rows) => rows.find((r) => r.section?.startsWith('launch(template)'))?.engineCompiles,
    op: '<=', value: 1, unit: 'compiles',
    bound: "the runtime's plan cache (digest of template, dependencies and node-definition set)",
  },
  {
    figure: 'engine instructions per activation (2-step run, callgrind)',
    source: 'bench/instructions/bench.mjs',
    pick: (rows) => rows[0]?.instructionsPerActivation,
    op: '<=', value: 700_000, unit: 'instructions',
    bound: 'QuickJS interpreting the engine inside WebAssembly; no single part of an activation is more than a seventh of it (bench/README.md)',
  },
  {
    figure: 'recorded replay in Chromium (largest journal of the browser bench)',
    source: 'bench/browser/bench.mjs',
    pick: (rows) => rows.reduce((best, r) => (r.events > (best?.events ?? -1) && typeof r['events/s (chromium)'] === 'number' ? r : best), undefined)?.['events/s (chromium)'],
    op: '>=', value: 25_000, unit: 'events/s',
    bound: 'one interpreted engine activation per recorded one, in the page',
  },
];

/** The extra targets with this run's figure (`value` null when the source did not run). */
export function extraTargetResults(doc) {
  return EXTRA_TARGETS.map((t) => {
    const x = (doc.extras ?? []).find((e) => e.source === t.source);
    const rows = x?.status === 'ok' ? (Array.isArray(x.rows) ? x.rows : x.rows?.rows ?? []) : [];
    const v = rows.length ? t.pick(rows) : undefined;
    return { ...t, measured: typeof v === 'number' ? v : null, status: x ? x.status : 'not run' };
  });
}

/** Adds `ratioToBestPeer` to every measured row, `bestPeer` to every workload, and `floorDistance`. */
export function analyse(doc) {
  const kind = Object.fromEntries(doc.systems.map((s) => [s.name, s.kind]));
  for (const w of WORKLOADS) {
    const wl = doc.workloads[w.id];
    const peers = Object.entries(wl.systems).filter(([n, r]) => r.status === 'ok' && kind[n] !== 'product');
    if (!peers.length) { wl.bestPeer = null; continue; }
    const [bestName, best] = peers.reduce((a, b) => (w.better === 'lower' ? (b[1].median < a[1].median ? b : a) : (b[1].median > a[1].median ? b : a)));
    wl.bestPeer = { name: bestName, median: best.median };
    for (const r of Object.values(wl.systems)) {
      if (r.status !== 'ok') continue;
      // > 1 means worse than the best peer, < 1 better, for every workload alike.
      r.ratioToBestPeer = w.better === 'lower' ? r.median / best.median : best.median / r.median;
    }
  }
  const floor = Object.fromEntries((doc.floors ?? []).filter((f) => f.status === 'ok').map((f) => [f.id, f]));
  doc.floorDistance = {};
  for (const s of doc.systems) {
    const d = {};
    const step = doc.workloads.hundredStep.systems[s.name];
    const two = doc.workloads.twoStep.systems[s.name];
    if (step?.status === 'ok') {
      if (floor.sqliteCommitFull) d.stepVsCommitFull = step.median / floor.sqliteCommitFull.median;
      if (floor.sqliteCommitNormal) d.stepVsCommitNormal = step.median / floor.sqliteCommitNormal.median;
    }
    if (two?.status === 'ok') {
      if (floor.sqliteCommitFull) d.twoStepVsCommitFull = two.median / floor.sqliteCommitFull.median;
      if (floor.engineInV8) d.twoStepVsEngineInV8 = two.median / floor.engineInV8.median;
    }
    doc.floorDistance[s.name] = d;
  }
  return doc;
}

const fmt = (x) => {
  if (x == null || !Number.isFinite(x)) return '–';
  if (Number.isInteger(x)) return x.toLocaleString('en-US');
  const a = Math.abs(x);
  const digits = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : 4;
  return x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: Math.min(digits, a >= 100 ? 0 : 2) });
};
const ratioText = (r) => (r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2));
const ratio = (r) => (r == null ? '–' : `${ratioText(r)}×`);
const esc = (s) => String(s ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderMarkdown(doc) {
  const m = doc.machine;
  const L = [];
  L.push('# Benchmark results', '');
  L.push(`Produced by \`npm run bench\` (bench/run.mjs)${doc.config.quick ? ' with **BENCH_QUICK=1: a smoke run, not figures to quote**' : ''}. See bench/README.md for what each workload measures.`, '');
  L.push('| machine | |', '| --- | --- |');
  L.push(`| date | ${m.date} |`, `| CPU | ${m.cpuCount} × ${esc(m.cpuModel)} |`, `| memory | ${m.memoryGiB} GiB |`);
  L.push(`| Node | ${m.node} |`, `| OS | ${esc(m.os)} |`, `| commit | ${m.commit ?? '–'} |`, `| load average (1, 5, 15 min) at start / end | ${m.loadAverageAtStart?.join(', ')} / ${m.loadAverageAtEnd?.join(', ')} |`, `| run time | ${doc.durationSeconds} s |`);
  const c = doc.config;
  L.push('', `Fan-out and foreach item counts, replay events: see the workload headings; rounds: ${c.rounds} interleaved rounds (A B C A B C) after a warm-up; 2-step: ${c.twoStepBatch} runs per round; 100-step: ${c.hundredStepBatch} per round; throughput: ${c.throughputRounds} window(s) of ${c.throughputSeconds} s, ${c.inFlight} in flight; fan-out: ${c.fanOutItems} items, concurrency ${c.fanOutConcurrency}, ${c.fanOutRounds} round(s); foreach: ${c.foreachItems} items, ${c.foreachRounds} fresh process(es); replay: ${c.replayEvents} events, ${c.replayRounds} round(s); cold start: ${c.coldStartRounds} fresh process(es).`, '');

  L.push('## Systems', '', '| system | kind | exact versions | durable mode | status |', '| --- | --- | --- | --- | --- |');
  for (const s of doc.systems) {
    L.push(`| ${s.name} | ${s.kind} | ${esc(s.version)} | ${esc(s.durability)} | ${s.status === 'ok' ? 'ran' : `**${s.status}**: ${esc(s.error)}`} |`);
  }

  L.push('', '## Results', '', 'Each figure is a median; the spread is p99 for latencies and min–max otherwise. "vs best peer" is the ratio to the best peer on that workload, oriented so that > 1 is worse (slower or fewer per second) and < 1 better.', '');
  for (const w of WORKLOADS) {
    const wl = doc.workloads[w.id];
    const rss = w.id === 'foreach10k';
    const cpu = Object.values(wl.systems).some((r) => r.cpuMs);
    L.push(`### ${w.label}`, '');
    const size = { fanOut1000: `${c.fanOutItems} items, concurrency ${c.fanOutConcurrency}. `, foreach10k: `${c.foreachItems} items, concurrency ${c.fanOutConcurrency}. `, replay10k: `${c.replayEvents} recorded events. ` }[w.id] ?? '';
    L.push(`${size ? `This run: ${size}` : ''}Unit: ${w.unit}, ${w.better} is better.${wl.bestPeer ? ` Best peer: ${wl.bestPeer.name}.` : ''}`, '');
    if (cpu) L.push(`CPU ms: on-CPU time of the benchmark process's main thread (its event loop) per ${w.id === 'hundredStep' ? 'step' : w.id === 'throughput16' ? 'run' : 'call'}, median; V8's background threads and the work of a server the system talks to (PostgreSQL, restate-server) are not in it.`, '');
    L.push(`| system | median | ${w.spread === 'p99' ? 'p99' : 'min – max'} | n | vs best peer |${rss ? ' peak RSS MB (median, max) | RSS after setup MB |' : ''}${cpu ? ' CPU ms |' : ''} note |`);
    L.push(`| --- | ---: | ---: | ---: | ---: |${rss ? ' ---: | ---: |' : ''}${cpu ? ' ---: |' : ''} --- |`);
    for (const [name, r] of Object.entries(wl.systems)) {
      if (r.status === 'ok') {
        const spread = w.spread === 'p99' ? fmt(r.p99) : `${fmt(r.min)} – ${fmt(r.max)}`;
        let note = r.note ?? '';
        if (r.serverPeakRssMB) note += `${note ? '; ' : ''}restate-server peak RSS ${fmt(r.serverPeakRssMB.median)} MB`;
        if (w.id === 'coldStart' && r.processStartMs) note += `${note ? '; ' : ''}of it before the workload (Node's start, the bench child): ${fmt(r.processStartMs.median)} ms`;
        L.push(`| ${name} | ${fmt(r.median)} | ${spread} | ${r.n} | ${ratio(r.ratioToBestPeer)} |${rss ? ` ${fmt(r.peakRssMB?.median)}, ${fmt(r.peakRssMB?.max)} | ${fmt(r.rssAfterSetupMB?.median)} |` : ''}${cpu ? ` ${fmt(r.cpuMs?.median)} |` : ''} ${esc(note)} |`);
      } else {
        const why = r.status === 'na' ? `n/a: ${r.reason}` : `**error**: ${r.error ?? r.reason}`;
        L.push(`| ${name} | ${r.status === 'na' ? 'n/a' : 'error'} | | | |${rss ? ' | |' : ''}${cpu ? ' |' : ''} ${esc(why)} |`);
      }
    }
    L.push('');
  }

  L.push('## Floors', '', '| floor | median ms | p99 ms | n | note |', '| --- | ---: | ---: | ---: | --- |');
  for (const f of doc.floors ?? []) {
    if (f.status === 'ok') L.push(`| ${esc(f.label)} | ${fmt(f.median)} | ${fmt(f.p99)} | ${f.n} | ${esc(f.version ?? '')} |`);
    else L.push(`| ${esc(f.label ?? f.id)} | ${f.status === 'na' ? 'n/a' : 'error'} | | | ${esc(f.reason ?? f.error)} |`);
  }
  L.push('', '### Distance from the floors', '', 'How many SQLite commits (WAL, synchronous=FULL, i.e. one fsync) one durable step and one 2-step run cost.', '');
  L.push('| system | step / commit (FULL) | step / commit (NORMAL) | 2-step run / commit (FULL) | 2-step run / engine in V8 |', '| --- | ---: | ---: | ---: | ---: |');
  for (const s of doc.systems) {
    const d = doc.floorDistance?.[s.name] ?? {};
    L.push(`| ${s.name} | ${ratio(d.stepVsCommitFull)} | ${ratio(d.stepVsCommitNormal)} | ${ratio(d.twoStepVsCommitFull)} | ${ratio(d.twoStepVsEngineInV8)} |`);
  }

  const product = doc.systems.find((s) => s.kind === 'product');
  L.push('', '## Targets of the product', '');
  if (!product) {
    L.push('No product row in this run (bench/systems/agent-dag-workflow.mjs is absent or filtered out).');
  } else {
    L.push('"What bounds it" is computed from this run\'s own figures (floors, main-thread CPU, phases of a fresh process); bench/README.md has the profiles behind it and what was tried.', '');
    L.push(`| figure | target | ${product.name} | met | what bounds it (this run) |`, '| --- | --- | ---: | --- | --- |');
    for (const t of TARGETS) {
      const r = doc.workloads[t.workload].systems[product.name];
      const v = r?.status !== 'ok' ? null : t.key === 'peakRss' ? r.peakRssMB?.median : r.median;
      L.push(targetLine(t, v, r?.status ?? '–', () => boundOf(doc, t.workload, r)));
    }
    for (const t of extraTargetResults(doc)) L.push(targetLine(t, t.measured, `${t.status} (${t.source})`, () => t.bound));
  }

  if (doc.extras?.length) {
    L.push('', '## Extra rows');
    for (const x of doc.extras) {
      L.push('', `### ${x.source}`, '');
      if (x.status !== 'ok') { L.push(`**error**: ${esc(x.error)}`); continue; }
      const rows = Array.isArray(x.rows) ? x.rows : x.rows?.rows;
      if (Array.isArray(rows) && rows.length && rows.every((r) => r && typeof r === 'object')) {
        const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
        L.push(`| ${keys.join(' | ')} |`, `| ${keys.map(() => '---').join(' | ')} |`);
        for (const r of rows) L.push(`| ${keys.map((k) => esc(typeof r[k] === 'number' ? fmt(r[k]) : typeof r[k] === 'object' ? JSON.stringify(r[k]) : r[k])).join(' | ')} |`);
      } else {
        L.push('```json', JSON.stringify(x.rows, null, 2), '```');
      }
    }
  }
  L.push('', 'Chart: [latest.svg](latest.svg) (ratio to the best peer per workload, log scale).', '');
  return L.join('\n');
}

/** One row of the targets table: the figure against its target, or why there is no figure. */
function targetLine(t, v, missing, bound) {
  const met = v == null ? '–' : (t.op === '<=' ? v <= t.value : v >= t.value) ? 'yes' : '**no**';
  return `| ${t.figure} | ${t.op === '<=' ? '≤' : '≥'} ${fmt(t.value)} ${t.unit} | ${v == null ? missing : `${fmt(v)} ${t.unit}`} | ${met} | ${esc(v == null ? '' : bound())} |`;
}

/**
 * What bounds a figure of the product, in this run's own numbers: the fsync'd commits a run must
 * make in order (the SQLite FULL floor), the CPU time of the process (the engine's activations are
 * most of it), the phases of a fresh process.
 */
function boundOf(doc, workload, r) {
  const commit = (doc.floors ?? []).find((f) => f.id === 'sqliteCommitFull' && f.status === 'ok')?.median;
  const cpu = r.cpuMs?.median;
  const c = doc.config ?? {};
  switch (workload) {
    case 'hundredStep':
      return `one fsync'd commit per step before its tool runs (${commit ? `${fmt(commit)} ms floor` : 'no floor'}) + ${fmt(cpu)} ms of main-thread CPU per step, most of it the step's engine activation`;
    case 'twoStep':
      return `three ordered fsync'd commits (${commit ? `3 × ${fmt(commit)} = ${fmt(3 * commit)} ms` : 'no floor'}) + ${fmt(cpu)} ms of main-thread CPU per run (three engine activations)`;
    case 'throughput16':
      return cpu ? `one event loop: ${fmt(cpu)} ms of main-thread CPU per run, i.e. at most ${fmt(Math.round(1000 / cpu))} runs/s while the process runs its engine on one thread` : '';
    case 'fanOut1000':
      return cpu ? `${fmt(cpu)} ms of main-thread CPU in ${fmt(r.median)} ms (${fmt(cpu / (c.fanOutItems ?? 1000))} ms per item of four events, most of it the engine's interpreter)` : '';
    case 'foreach10k':
      return 'V8 defaults of an embedding process: the young generation grows and TurboFan recompiles the engine (bench/README, "Memory of the Node host": 95–97 MB with the lean settings)';
    case 'replay10k':
      return cpu ? `${fmt(cpu)} ms of main-thread CPU per replay of ${fmt(c.replayEvents)} events: one interpreted engine activation per recorded one` : '';
    case 'coldStart': {
      const p = r.phasesMs;
      return p ? `Node's start ${fmt(p.start)} ms, import ${fmt(p.import)} ms, open (engine component, SQLite) ${fmt(p.open)} ms, first run ${fmt(p.firstRun)} ms` : '';
    }
    default:
      return '';
  }
}

const PALETTE = ['#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const x = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function renderSvg(doc) {
  const names = doc.systems.map((s) => s.name);
  const color = Object.fromEntries(names.map((n, i) => [n, PALETTE[i % PALETTE.length]]));
  const groups = WORKLOADS.map((w) => ({
    w, rows: names.map((n) => ({ n, r: doc.workloads[w.id].systems[n] })).filter((e) => e.r),
  })).filter((g) => g.rows.length);
  const ratios = groups.flatMap((g) => g.rows.map((e) => e.r.ratioToBestPeer).filter((v) => v > 0));
  const lo = Math.min(0.1, ...ratios.map((v) => 10 ** Math.floor(Math.log10(v))));
  const hi = Math.max(10, ...ratios.map((v) => 10 ** Math.ceil(Math.log10(v))));
  const W = 980, left = 330, right = 150, plotW = W - left - right, barH = 14, gap = 4, groupGap = 26, top = 70;
  const X = (v) => left + ((Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotW;
  let y = top;
  const body = [];
  for (const g of groups) {
    body.push(`<text x="10" y="${y + 11}" font-weight="bold">${x(g.w.label.split(':')[0].split(' (')[0])}</text>`);
    y += 18;
    for (const { n, r } of g.rows) {
      body.push(`<text x="${left - 8}" y="${y + barH - 3}" text-anchor="end">${x(n)}</text>`);
      if (r.status === 'ok' && r.ratioToBestPeer > 0) {
        const x0 = X(Math.max(lo, Math.min(1, r.ratioToBestPeer))), x1 = X(Math.min(hi, Math.max(1, r.ratioToBestPeer)));
        body.push(`<rect x="${x0.toFixed(1)}" y="${y}" width="${Math.max(1.5, x1 - x0).toFixed(1)}" height="${barH}" fill="${color[n]}"/>`);
        body.push(`<text x="${(Math.max(x1, X(1)) + 6).toFixed(1)}" y="${y + barH - 3}">${ratioText(r.ratioToBestPeer)}× (${x(fmt(r.median))} ${x(g.w.unit)})</text>`);
      } else {
        body.push(`<text x="${X(1) + 6}" y="${y + barH - 3}" fill="#888">${r.status === 'na' ? 'n/a' : 'error'}</text>`);
      }
      y += barH + gap;
    }
    y += groupGap - gap;
  }
  const axis = [];
  for (let e = Math.round(Math.log10(lo)); e <= Math.round(Math.log10(hi)); e++) {
    const v = 10 ** e, px = X(v).toFixed(1);
    axis.push(`<line x1="${px}" y1="${top - 6}" x2="${px}" y2="${y - groupGap}" stroke="${v === 1 ? '#000' : '#ddd'}" stroke-width="${v === 1 ? 1.2 : 1}"/>`);
    axis.push(`<text x="${px}" y="${top - 10}" text-anchor="middle" fill="#555">${v >= 1 ? v : v.toFixed(-e)}×</text>`);
  }
  const H = y + 30;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="22" font-size="16" font-weight="bold">Ratio to the best peer per workload (log scale; 1× = best peer, right of 1 is worse)</text>
<text x="10" y="42" fill="#555">${x(`${doc.machine.cpuCount} × ${doc.machine.cpuModel}, Node ${doc.machine.node}, ${doc.machine.date.slice(0, 10)}${doc.config.quick ? ', BENCH_QUICK smoke run' : ''}`)}</text>
${axis.join('\n')}
${body.join('\n')}
<text x="10" y="${H - 10}" fill="#555">Throughput and replay are inverted (best / value) so that right of 1× always means worse.</text>
</svg>
`;
}
