// The output of `agent-workflow`: documents under one api version, progress on stderr.
import { printer } from '../../shared/cli-output.js';

export { progress } from '../../shared/cli-output.js';

export const cliApiVersion = 'agent-workflow.cli/v1';

export const print = printer(cliApiVersion);
