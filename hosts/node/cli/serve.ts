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
import { integerOption, optionString, type ParsedArgs } from './args.js';
import { cliLimits } from '../limits.js';
import { CliError } from './command.js';
import { exitCodes } from './exit-codes.js';
import { loadHostModule, withRuntime } from './host-module.js';
import { print, progress } from './output.js';

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
      const { httpToken, startHttpApi } = await import('../observe/http-api.js');
      http = await startHttpApi(rt, { host: httpHost, port: httpPort, token: httpToken(optionString(args, 'http-token-file')), insecureNoAuth: args.options.has('insecure-no-auth'), log, triggers });
    }
    const worker = await rt.startWorker({ ...(maxRuns ? { maxRuns } : {}), ...(drainMs !== undefined ? { drainMs } : {}), ...(args.options.has('no-deliveries') ? { deliveries: false } : {}), log });
    const { CronBindingScheduler } = await import('../triggers/cron-bindings.js');
    const cronBindings = new CronBindingScheduler(rt, triggers, { log });
    await cronBindings.start();
    print('Serving', { owner: rt.ownerId, maxRuns: maxRuns ?? 64, memory: { wasmTier: appliedWasmTier() ?? null, youngGen: appliedYoungGen() ?? null }, cronBindings: cronBindings.list(), deployment: triggers.deployment, ...(http ? { http: http.url, page: `${http.url}/page/` } : {}) });
    const signal = await new Promise<string>((done) => {
      process.once('SIGINT', () => done('SIGINT'));
      process.once('SIGTERM', () => done('SIGTERM'));
    });
    progress(`agent-workflow serve: ${signal}: stopping (no new claims; calls in flight may finish)`);
    await cronBindings.stop();
    await http?.close();
    const stopped = await worker.stop();
    print('Stopped', { signal, drained: stopped.drained, ...worker.stats });
    return exitCodes.ok;
  });
}
