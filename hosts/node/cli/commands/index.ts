// Commands defined outside main.ts, by the module that holds them. A command's module loads when
// that command runs, so `run` or `trace` load none of them.
import type { CliCommand } from '../command.js';

type Table = Record<string, CliCommand>;

const catalog = async (): Promise<Table> => (await import('./catalog.js')).catalogCommands;
const browser = async (): Promise<Table> => (await import('./browser.js')).browserCommands;
const deliveries = async (): Promise<Table> => (await import('./deliveries.js')).deliveriesCommands;
const triggers = async (): Promise<Table> => (await import('./triggers.js')).triggerCommands;
const router = async (): Promise<Table> => (await import('./router.js')).routerCommands;
const store = async (): Promise<Table> => (await import('./store.js')).storeCommands;

const modules: Record<string, () => Promise<Table>> = {
  draft: catalog,
  publish: catalog,
  search: catalog,
  describe: catalog,
  diff: catalog,
  'migrate-template': catalog,
  'replay-web': browser,
  deliveries,
  binding: triggers,
  ingress: triggers,
  router,
  doctor: store,
  gc: store,
  artifacts: store,
};

/** The names of the commands this folder holds. */
export const extraCommandNames: readonly string[] = Object.keys(modules);

/** The command `name` from its module, or `undefined` when no module here holds it. */
export async function loadExtraCommand(name: string): Promise<CliCommand | undefined> {
  const load = Object.prototype.hasOwnProperty.call(modules, name) ? modules[name] : undefined;
  if (!load) return undefined;
  const table = await load();
  const command = table[name];
  if (!command) throw new Error(`command ${name} is listed in cli/commands/index.ts but its module does not define it`);
  return command;
}
