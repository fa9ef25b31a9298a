// The store's upkeep from the command line: `doctor` (is the SQLite file sound), `gc` (artifact
// retention) and `artifacts rotate` (key rotation of sealed artifacts). docs/durability.md.
import type { CliCommand } from '../command.js';
import { CliError } from '../command.js';
import { integerOption, UsageError } from '../args.js';
import { exitCodes } from '../exit-codes.js';
import { storeLocationOf, withRuntime } from '../host-module.js';
import { print, progress } from '../output.js';
import { artifactLimits } from '../../limits.js';

export const storeCommands: Record<string, CliCommand> = {
  doctor: {
    flags: [],
    async run(args) {
      const location = await storeLocationOf(args);
      if (/^postgres(ql)?:\/\//i.test(location)) {
        throw new CliError('doctor.unsupported-store', 'doctor examines SQLite store files; PostgreSQL checks its own pages (data checksums, amcheck): see docs/durability.md, "Damaged SQLite files"');
      }
      const { examineSqliteStore } = await import('../../stores/sqlite/doctor.js');
      const report = examineSqliteStore(location);
      print('DoctorReport', { ...report });
      for (const [what, check] of Object.entries({ 'journal rows': report.journalRows, checkpoints: report.checkpoints, plans: report.plans, artifacts: report.artifacts })) {
        for (const d of check.damaged) progress(`damaged: ${d}`);
        if (check.unchecked > 0) progress(`${check.unchecked} ${what} carry no checksum (stored before schema v12, or sealed) and were not checked`);
      }
      if (!report.healthy) progress(`${location} is damaged: restore it from a backup (docs/durability.md, "Damaged SQLite files")`);
      return report.healthy ? exitCodes.ok : exitCodes.storeUnusable;
    },
  },
  gc: {
    flags: ['dry-run'],
    async run(args) {
      const retentionDays = integerOption(args, 'retention-days', { min: 1, max: artifactLimits.retentionDaysMax });
      return withRuntime(args, async (rt) => {
        if (retentionDays === undefined && rt.artifacts.retentionDays === undefined) throw new UsageError('gc needs a retention time: --retention-days N, or capture.retentionDays in the host module');
        print('GcReport', { ...(await rt.artifacts.collect({ ...(retentionDays !== undefined ? { retentionDays } : {}), dryRun: args.options.has('dry-run') })) });
        return exitCodes.ok;
      });
    },
  },
  artifacts: {
    flags: ['dry-run'],
    async run(args) {
      if (args.positional[0] !== 'rotate') throw new UsageError('usage: agent-workflow artifacts rotate [--dry-run]');
      return withRuntime(args, async (rt) => {
        print('RotationReport', { ...(await rt.artifacts.rotateKeys({ dryRun: args.options.has('dry-run') })) });
        return exitCodes.ok;
      });
    },
  },
};
