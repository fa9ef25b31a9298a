// The process the custom node crash test kills: a Node host from the built pieces running one
// `acme.compensate@1` node, whose implementation records its call in `calls.jsonl` (outside the
// store) and then SIGKILLs the process, before the outcome can be journaled.
//
//   node custom-node-crash-child.mjs '<json: {dir, plan, effect}>'
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildHost, everything, registryGateway, SqliteJournalStore } from './host.mjs';

const { dir, plan: planFile, effect } = JSON.parse(process.argv[2]);
const plan = JSON.parse(readFileSync(planFile, 'utf8'));

const gateway = registryGateway({
  nodes: {
    'acme.compensate@1': {
      configSchema: {},
      effect,
      implementationDigest: 'sha256:compensate-1',
      execute(input) {
        appendFileSync(join(dir, 'calls.jsonl'), `${JSON.stringify({ input, pid: process.pid })}\n`);
        process.kill(process.pid, 'SIGKILL');
        return new Promise(() => undefined);
      },
    },
  },
});

const store = SqliteJournalStore.open(join(dir, 'workflow.db'));
const host = await buildHost({ store, gateway });
await host.kernel.launch({ runId: 'crash-1', plan, templateKey: plan.root, input: { amount: 9 }, authority: everything });
await host.kernel.waitFor('crash-1', true);
// Not reached: the implementation kills the process.
process.exit(3);
