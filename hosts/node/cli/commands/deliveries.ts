// Result delivery in the CLI: `deliveries list|retry|drain`. The `--deliver-to` option of `run`
// and the `--delivery-*` options of every command that opens a runtime are read in
// ../delivery-args.ts.
import { optionString, UsageError } from '../args.js';
import type { CliCommand } from '../command.js';
import { wholeNumber } from '../delivery-args.js';
import { withRuntime } from '../host-module.js';
import { print } from '../output.js';

const states = ['pending', 'delivered', 'dead'] as const;

export const deliveriesCommands: Record<string, CliCommand> = {
  deliveries: {
    flags: [],
    async run(args) {
      const [verb, id] = args.positional;
      if (verb === 'list') {
        const status = optionString(args, 'status');
        if (status !== undefined && !(states as readonly string[]).includes(status)) throw new UsageError(`--status must be one of ${states.join(', ')}`);
        const runId = optionString(args, 'run');
        const limit = wholeNumber(args, 'limit');
        return withRuntime(args, async (rt) => {
          const deliveries = await rt.deliveries.list({ ...(status ? { state: status as (typeof states)[number] } : {}), ...(runId ? { runId } : {}), ...(limit ? { limit } : {}) });
          print('DeliveryList', { deliveries });
          return 0;
        });
      }
      if (verb === 'retry') {
        if (id === undefined) throw new UsageError('usage: agent-workflow deliveries retry <delivery-id>');
        return withRuntime(args, async (rt) => {
          print('DeliveryRetried', { delivery: await rt.deliveries.retry(id) });
          return 0;
        });
      }
      if (verb === 'drain') {
        return withRuntime(args, async (rt) => {
          print('DeliveriesDrained', { ...(await rt.deliveries.drain()) });
          return 0;
        });
      }
      throw new UsageError('usage: agent-workflow deliveries list [--status pending|delivered|dead] [--run <run-id>] [--limit N] | deliveries retry <delivery-id> | deliveries drain');
    },
  },
};
