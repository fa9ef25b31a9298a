// Which host a state directory belongs to, told by the files only that host writes there. A host
// pointed at another host's directory refuses it (`store.not-a-store`) before it creates anything:
// the Node host would otherwise create `workflow.db` beside a router journal and answer "0 runs",
// and the router would start an empty journal beside a Node store.
//
//   file in the directory                           | host
//   ------------------------------------------------+------
//   workflow.db (SQLite; also -wal, -shm, -wake-*)  | node
//   journal.log, journal.log.mark, receipts.log     | router
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { StoreError } from '../core/store.js';

export type StateDirHost = 'node' | 'router';

const filesOf: Readonly<Record<StateDirHost, readonly string[]>> = {
  node: ['workflow.db', 'workflow.db-wal'],
  router: ['journal.log', 'journal.log.mark', 'receipts.log'],
};

const commandOf: Readonly<Record<StateDirHost, string>> = {
  node: 'agent-workflow <command> --dir',
  router: 'agent-workflow router <verb> --dir',
};

/** The host whose files `dir` holds (`undefined`: none, e.g. a new or empty directory). */
export function stateDirHost(dir: string): { host: StateDirHost; file: string } | undefined {
  for (const host of ['node', 'router'] as const) {
    for (const name of filesOf[host]) if (existsSync(join(dir, name))) return { host, file: name };
  }
  return undefined;
}

/** Throws `store.not-a-store` when `dir` belongs to a host other than `host`. */
export function assertStateDirOf(host: StateDirHost, dir: string): void {
  const found = stateDirHost(dir);
  if (!found || found.host === host) return;
  throw new StoreError(
    'store.not-a-store',
    `${dir} is a ${found.host} state directory (it holds ${found.file}), not a ${host} one; open it with \`${commandOf[found.host]} ${dir}\``,
  );
}
