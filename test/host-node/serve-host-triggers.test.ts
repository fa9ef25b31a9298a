// `serve` no longer fires cron `triggers` of a host module (cron schedules are catalog bindings,
// with ingress records): a host module that still declares them is refused before anything
// opens, with a typed error that says how to migrate, and the usage exit code.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

describe('serve with a host module that declares cron triggers', () => {
  it('refuses it with host.triggers-removed and exit 2, and creates no store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'serve-triggers-'));
    const config = join(dir, 'agent-workflow.config.mjs');
    writeFileSync(config, `export default { dir: './state', triggers: [{ id: 'tick', cron: '* * * * * *', template: { spec: {} }, input: {} }] };\n`);
    const r = await runCli(['serve', '--config', config], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.out).toEqual([
      {
        apiVersion: 'agent-workflow.cli/v1',
        kind: 'Error',
        error: {
          code: 'host.triggers-removed',
          message:
            'the host module declares `triggers`, which serve no longer fires: publish each template to the catalog and put a cron binding for it (`agent-workflow binding put` with `source: cron`, then `binding publish`); see docs/triggers.md, "Migrating host module triggers"',
        },
      },
    ]);
    expect(existsSync(join(dir, 'state'))).toBe(false);
  });
});
