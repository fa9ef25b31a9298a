// Where a runtime's store is: its `store` (a PostgreSQL URL or a SQLite file), else `workflow.db`
// in its state directory (default `./.agent-workflow`). One rule for the SDK and every command
// (`doctor` reads the file without opening a runtime).
import { join, resolve } from 'node:path';

export function storeLocation(options: { dir?: string; store?: string }): string {
  return options.store ?? join(resolve(options.dir ?? '.agent-workflow'), 'workflow.db');
}
