// Runs one workload of one system module in a fresh process, so that peak RSS and cold start are
// per system. Usage: node bench/lib/child.mjs <module path> <workload> <params JSON> <tmp dir>
// Prints one line "@@BENCH_RESULT <json>" and exits 0, or "@@BENCH_ERROR <message>" and exits 1.
import { pathToFileURL } from 'node:url';

const [file, workload, paramsJson, tmpDir] = process.argv.slice(2);
const params = JSON.parse(paramsJson || '{}');
const mb = (kb) => Math.round((kb / 1024) * 10) / 10;

try {
  const mod = (await import(pathToFileURL(file).href)).default;
  const fn = mod.workloads?.[workload];
  if (typeof fn !== 'function') throw new Error(`no workload ${workload}`);
  const ctx = { tmpDir, params, quick: process.env.BENCH_QUICK === '1', child: true };
  let out;
  if (workload === 'coldStart') {
    // No setup(): the workload itself loads and initialises everything in this fresh process. It
    // returns its own time to the first completed run (`ms`, from its start, before its teardown);
    // the figure is the same for every system: from the start of this process (Node's own start
    // included) to that completion, `t0 + ms`.
    const t0 = performance.now();
    const r = await fn(ctx);
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage();
    const workloadMs = r?.ms ?? wall;
    out = { ms: t0 + workloadMs, workloadMs, processStartMs: t0, wallMs: wall, sinceProcessStartMs: performance.now(), cpuMs: (cpu.user + cpu.system) / 1000, extra: r?.extra };
  } else {
    await mod.setup(ctx);
    const rssAfterSetupMB = mb(process.memoryUsage().rss / 1024);
    const t0 = performance.now();
    const r = await fn(params);
    const wall = performance.now() - t0;
    out = {
      ms: r?.ms ?? wall, wallMs: wall, rssAfterSetupMB,
      peakRssMB: mb(process.resourceUsage().maxRSS), extra: r?.extra,
    };
    await Promise.race([mod.teardown?.(), new Promise((r) => setTimeout(r, 20_000).unref())]).catch(() => {});
  }
  process.stdout.write(`\n@@BENCH_RESULT ${JSON.stringify(out)}\n`);
  process.exit(0);
} catch (e) {
  process.stdout.write(`\n@@BENCH_ERROR ${JSON.stringify(String(e?.stack ?? e).slice(0, 2000))}\n`);
  process.exit(1);
}
