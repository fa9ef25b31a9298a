// `agent-workflow serve`: the one place a serving process is put together. Over one runtime
// (the SDK's `open` wires the kernel, live streams and telemetry) it adds, each from what it
// needs: the trigger pipeline (webhook and DingTalk routes, cron bindings), the HTTP API, and a
// worker that claims queued runs and sends deliveries. A graceful stop takes them down in the
// reverse order and hands back what it cannot finish.
//
// Host modules no longer declare cron `triggers` here: cron schedules are catalog bindings
// (`source: cron`), which go through the trigger pipeline and its ingress records. A host module
// that still has `triggers` is refused (`host.triggers-removed`; docs/triggers.md, "Migrating
// host module triggers").
import { appliedWasmTier, appliedYoungGen } from '../../shared/component.js';
import { integerOption, optionString, UsageError, type ParsedArgs } from './args.js';
import { cliLimits } from '../limits.js';
import { CliError } from './command.js';
import { exitCodes } from './exit-codes.js';
import { loadHostModule, withRuntime } from './host-module.js';
import { print, progress } from './output.js';
import type { WorkflowRuntime } from '../runtime.js';

/** `--http-mcp <profiles>` with its policy flags: the MCP gateway on `POST /v1/mcp`, or none. */
async function httpMcpOf(args: ParsedArgs): Promise<import('../mcp/http.js').HttpMcpOptions | undefined> {
  const text = optionString(args, 'http-mcp');
  const secretRefs = optionString(args, 'mcp-delivery-secrets')?.split(',').map((s) => s.trim()).filter(Boolean);
  if (text === undefined) {
    if (args.options.has('mcp-allow-inline') || args.options.has('mcp-allow-deliveries') || secretRefs) throw new UsageError('--mcp-allow-inline, --mcp-allow-deliveries and --mcp-delivery-secrets need --http-mcp <profiles>');
    return undefined;
  }
  if (secretRefs && !args.options.has('mcp-allow-deliveries')) throw new UsageError('--mcp-delivery-secrets names the secrets of --mcp-allow-deliveries, which is missing');
  const { parseMcpProfiles } = await import('../mcp/server.js');
  let profiles: ReturnType<typeof parseMcpProfiles>;
  try {
    profiles = parseMcpProfiles(text);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return { profiles, allowInline: args.options.has('mcp-allow-inline'), deliveries: { allow: args.options.has('mcp-allow-deliveries'), ...(secretRefs ? { secretRefs } : {}) } };
}

/** How often `serve` collects artifacts past the deployment's `capture.retentionDays`. */
export const retentionIntervalMs = 3_600_000;

/** Collects expired artifacts now and every hour, one collection at a time; says what it did in the log. */
function artifactRetention(rt: WorkflowRuntime, log: (level: string, message: string) => void): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const collect = () => {
    running = running.then(async () => {
      try {
        const r = await rt.artifacts.collect();
        if (r.deleted > 0 || r.keptForUnfinishedRuns > 0) log('info', `artifact retention (${r.retentionDays} days): deleted ${r.deleted} (${r.deletedBytes} bytes), kept ${r.keptForUnfinishedRuns} that unfinished runs name`);
      } catch (err) {
        log('warn', `artifact retention failed: ${(err as Error).message}`);
      }
    });
  };
  collect();
  const timer = setInterval(collect, retentionIntervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

export async function serve(args: ParsedArgs): Promise<number> {
  const host = await loadHostModule(optionString(args, 'config'));
  const hostTriggers = (host as { triggers?: unknown }).triggers;
  if (hostTriggers !== undefined && !(Array.isArray(hostTriggers) && hostTriggers.length === 0)) {
    throw new CliError(
      'host.triggers-removed',
      'the host module declares `triggers`, which serve no longer fires: publish each template to the catalog and put a cron binding for it (`agent-workflow binding put` with `source: cron`, then `binding publish`); see docs/triggers.md, "Migrating host module triggers"',
    );
  }
  const maxRuns = integerOption(args, 'max-runs', { min: 1, max: cliLimits.serveMaxRunsMax });
  const drainMs = integerOption(args, 'drain-ms', { min: 1, max: cliLimits.durationMsMax });
  const httpPort = integerOption(args, 'http', { min: 0, max: cliLimits.portMax });
  const httpHost = optionString(args, 'http-host') ?? '127.0.0.1';
  return withRuntime(args, async (rt) => {
    const log = (level: string, message: string) => progress(`${level}: ${message}`);
    // One trigger pipeline for the hook routes and the catalog's cron bindings.
    const { triggerPipeline } = await import('./commands/triggers.js');
    const triggers = await triggerPipeline(rt, args, log);
    let http: import('../observe/http-api.js').HttpApi | undefined;
    if (httpPort !== undefined) {
      const { httpOperators, httpToken, startHttpApi } = await import('../observe/http-api.js');
      // The read-only token file gets the same typed errors as the operator's; it has no environment variable.
      const readonlyFile = optionString(args, 'http-readonly-token-file');
      const readonlyToken = readonlyFile !== undefined ? { readonlyToken: httpToken(readonlyFile, {})! } : {};
      const operators = httpOperators(optionString(args, 'http-operators-file'));
      const mcp = await httpMcpOf(args);
      http = await startHttpApi(rt, { host: httpHost, port: httpPort, token: httpToken(optionString(args, 'http-token-file')), ...readonlyToken, ...(operators ? { operators } : {}), ...(mcp ? { mcp: { ...mcp, runtime: rt } } : {}), insecureNoAuth: args.options.has('insecure-no-auth'), log, triggers, console: rt });
    }
    const worker = await rt.startWorker({ ...(maxRuns ? { maxRuns } : {}), ...(drainMs !== undefined ? { drainMs } : {}), ...(args.options.has('no-deliveries') ? { deliveries: false } : {}), log });
    const { CronBindingScheduler } = await import('../triggers/cron-bindings.js');
    const cronBindings = new CronBindingScheduler(rt, triggers, { log });
    await cronBindings.start();
    const retention = rt.artifacts.retentionDays !== undefined ? artifactRetention(rt, log) : undefined;
    print('Serving', { owner: rt.ownerId, maxRuns: maxRuns ?? 64, memory: { wasmTier: appliedWasmTier() ?? null, youngGen: appliedYoungGen() ?? null }, cronBindings: cronBindings.list(), deployment: triggers.deployment, ...(http ? { http: http.url, page: `${http.url}/page/` } : {}) });
    const signal = await new Promise<string>((done) => {
      process.once('SIGINT', () => done('SIGINT'));
      process.once('SIGTERM', () => done('SIGTERM'));
    });
    progress(`agent-workflow serve: ${signal}: stopping (no new claims; calls in flight may finish)`);
    await cronBindings.stop();
    await retention?.stop();
    await http?.close();
    const stopped = await worker.stop();
    print('Stopped', { signal, drained: stopped.drained, ...worker.stats });
    return exitCodes.ok;
  });
}
