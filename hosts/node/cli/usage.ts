// The usage table: the one source of `agent-workflow --help`, `agent-workflow help <command>`
// and `agent-workflow <command> --help`. Every command of the CLI has an entry (main.ts asserts it).
import { exitCodeLines } from './exit-codes.js';

export interface CommandUsage {
  /** Argument lines after `agent-workflow <name>`; the first is the short form. */
  synopsis: string[];
  summary: string;
  /** Options of this command beyond the common ones: [option, what it does]. */
  options?: [string, string][];
}

const inputOptions: [string, string][] = [['--input <json|file|->', 'the run input: inline JSON, a file, or - for stdin (default {})']];

export const usageTable: Record<string, CommandUsage> = {
  validate: { synopsis: ['<template.json>'], summary: 'check a template; every error with code and JSON pointer' },
  run: {
    synopsis: ['<template.json | id@revision> [--input <json|file|->] [--deps <dir>] [--no-wait] [--deliver-to <url> [--deliver-secret-env NAME] [--deliver-token-env NAME]] [--traceparent <w3c>]'],
    summary: 'run a template or a published revision and print the result',
    options: [
      ...inputOptions,
      ['--deps <dir>', '<id>@<rev>.json templates that workflow.call@1 nodes call'],
      ['--no-wait', 'commit the run to the durable queue and return; a worker (serve) runs it'],
      ['--deliver-to <target>', 'send the result (and each approval it waits for) to webhook:<url>, dingtalk:<robot url> or a bare http(s) URL (a webhook); see docs/triggers.md'],
      ['--deliver-secret-env <NAME>', 'the environment variable holding the signing secret of --deliver-to (read by the sender, never stored)'],
      ['--deliver-token-env <NAME>', "the environment variable holding a dingtalk: robot's access_token (read by the sender, never stored; the URL must not carry it)"],
      ['--traceparent <w3c>', 'the W3C trace context the run joins (else TRACEPARENT); kept in the journal, handed to every tool and agent call'],
    ],
  },
  trace: {
    synopsis: ['<run-id> [--format jsonl|json|text] [--follow]'],
    summary: 'print every event of a run',
    options: [['--follow', 'then print each commit as it becomes durable, until the run ends (waits through pauses); exits as run does for its end']],
  },
  runs: { synopsis: ['[--status <s>[,<s>…]] [--limit N]'], summary: 'list runs, newest first' },
  resume: {
    synopsis: ['<run-id> [--no-wait]'],
    summary: 'resume a run (after a crash, or to re-check authority); applied by its owner when it has a live one, and followed until it ends or rests; a run still queued (never started) is not resumed: it prints RunQueued and exits 12, since only a worker starts it',
    options: [['--no-wait', 'only commit the request to the run inbox: its owner, or a worker, applies it (prints CommandQueued)']],
  },
  cancel: { synopsis: ['<run-id> [--reason <text>]'], summary: 'cancel a run and every call it has in flight' },
  approve: { synopsis: ['<run-id> <node-id> [--by <name>] [--comment <text>]'], summary: 'approve a waiting human.approval@1 node' },
  reject: { synopsis: ['<run-id> <node-id> [--by <name>] [--comment <text>]'], summary: 'reject a waiting human.approval@1 node' },
  resolve: {
    synopsis: ['<run-id> <node-id> --succeeded <json|file|-> | --retry | --fail <reason> [--item N] [--attention-seq N] [--by <name>]'],
    summary: 'settle a node whose outcome is unknown after a crash',
    options: [
      ['--succeeded <json|file|->', 'the output it produced: inline JSON, a file, or - for stdin'],
      ['--attention-seq N', 'the unknown decided on (the `seq` of the run\'s attention entry, `runs`); refused (exit 8, resolve.stale) when the node\'s unknown changed since, and required (resolve.unknown-unnamed) when it came after an earlier resolution of the node'],
    ],
  },
  export: { synopsis: ['<run-id> [--out <file>]'], summary: 'write a self-contained journal export' },
  replay: {
    synopsis: ['<run-id> | --from <export.json> [--mode inspect|recorded|live] [--template <edited.json>]', '<run-id|file> --web'],
    summary: 'inspect or replay a run; --web opens the browser replay page',
  },
  'replay-web': { synopsis: ['<run-id|export.json> [--port N] [--host H]'], summary: 'serve the browser replay page for a run' },
  draft: { synopsis: ['put <file> [--expected <draft-revision>]', 'get <id>'], summary: 'edit a mutable draft (compare-and-set)' },
  publish: { synopsis: ['<id> --expected <draft-revision>'], summary: 'publish an immutable revision of a draft' },
  search: { synopsis: ['<text>'], summary: 'search the catalog' },
  describe: { synopsis: ['<id>@<rev> [--view schema|template|plan]'], summary: 'describe a published revision' },
  diff: { synopsis: ['<id>@<a> <id>@<b>'], summary: 'semantic diff of two revisions' },
  'migrate-template': { synopsis: ['<legacy.json> [--out <file>]'], summary: 'convert a 0.2-protocol template' },
  binding: {
    synopsis: ['put <file> [--expected <revision>]', 'publish <id>@<revision>', 'list [--source webhook|dingtalk|cron] [--state draft|published|disabled]', 'describe <id>[@<revision>]', 'disable <id>[@<revision>]'],
    summary: 'trigger bindings: a webhook, DingTalk robot or cron schedule bound to a published revision (see docs/triggers.md)',
  },
  ingress: {
    synopsis: ['list [--binding <id>] [--status received|rejected|deduplicated|launched|missed] [--run <run-id>] [--after <id>] [--limit N]'],
    summary: 'the ingress journal: every event a trigger received and what became of it',
  },
  router: { synopsis: ['start --dir <state dir> --profile edge|standalone', 'submit|list|get|trace|cancel|approve|reject|resolve|export|stats --dir <state dir> … (to a running router)'], summary: 'the router host: the same engine on small machines, and its operator verbs (docs/router.md)' },
  serve: {
    synopsis: ['[--max-runs N] [--drain-ms N] [--config <host module>] [--http <port> [--http-host H] [--http-token-file F] [--http-readonly-token-file F] [--http-operators-file F] [--http-mcp <profiles> [--mcp-allow-inline] [--mcp-allow-deliveries [--mcp-delivery-secrets A,B]]] [--insecure-no-auth]]'],
    summary: "a worker until SIGTERM/SIGINT: claims queued runs and runs whose owner is gone, fires the host module's cron triggers and the catalog's cron bindings, answers webhook and DingTalk trigger routes with --http; a graceful stop lets calls in flight finish for --drain-ms (default 10000) and hands the rest back",
    options: [
      ['--http <port>', 'also serve the read-only HTTP API: runs, event pages, live events as Server-Sent Events (0 picks a free port; see docs/observability.md)'],
      ['--http-host <host>', 'the address to listen on (default 127.0.0.1)'],
      ['--http-token-file <file>', 'the bearer token every request must carry (else AGENT_WORKFLOW_HTTP_TOKEN); it may act in the console'],
      ['--http-readonly-token-file <file>', 'a second bearer token that may only read (the console refuses its actions: 403 http.forbidden)'],
      ['--http-operators-file <file>', 'named operator tokens, one "<name> <token>" a line: each may act, and its actions (approve, resolve, publish) are recorded as that name'],
      ['--http-mcp <profiles>', "the MCP gateway on POST /v1/mcp (Streamable HTTP) with these profiles (invoke, author, operator): operator tokens only, each request acting as its token's principal"],
      ['--mcp-allow-inline, --mcp-allow-deliveries, --mcp-delivery-secrets <list>', 'its policy, as agent-workflow mcp --allow-inline, --allow-deliveries, --delivery-secrets'],
      ['--insecure-no-auth', 'serve the HTTP API without a token: loopback hosts only'],
      ['--no-deliveries', 'do not send result deliveries from this worker'],
      ['--delivery-attempts N', 'attempts of a delivery before it is dead (default 8)'],
      ['--delivery-backoff-ms N', 'first retry delay, doubled per attempt with jitter (default 1000)'],
      ['--delivery-timeout-ms N', 'time limit of one send (default 10000)'],
      ['--delivery-lease-ms N', 'how long a sender holds a claimed delivery (default 30000; more than the timeout)'],
      ['--delivery-allow-targets <list>', 'non-public hosts (host or host:port, comma-separated) deliveries may reach, added to ADW_DELIVERY_ALLOW_TARGETS and the host module\'s delivery.allowTargets'],
      ['--deployment <name>', 'the deployment in every trigger dedupe key (else AGENT_WORKFLOW_DEPLOYMENT, default "default")'],
    ],
  },
  doctor: {
    synopsis: ['[--dir <dir> | --store <file>]'],
    summary: "examine a SQLite store without changing it: SQLite's integrity_check, then every journal row, checkpoint and plan against its checksum and every plain artifact against its digest; exit 0 when sound, 9 when damaged",
  },
  artifacts: {
    synopsis: ['rotate [--dry-run]'],
    summary: "re-wrap artifacts sealed under an older key under the current one (the first of ADW_ARTIFACT_KEYS, or the host module's artifactKeys), and seal plain ones when capture.encryptArtifacts is on",
    options: [['--dry-run', 'count what would change, change nothing']],
  },
  gc: {
    synopsis: ['[--retention-days N] [--dry-run]'],
    summary: "delete captured artifacts past the deployment's retention time that no unfinished run names (journals are kept); --dry-run only counts them",
    options: [
      ['--retention-days N', "the TTL in days (default: the host module's capture.retentionDays; one of them is needed)"],
      ['--dry-run', 'report what would be deleted, delete nothing'],
    ],
  },
  deliveries: {
    synopsis: ['list [--status pending|delivered|dead] [--run <run-id>] [--limit N]', 'retry <delivery-id>', 'drain'],
    summary: 'result deliveries: list them (dead ones are the dead-letter queue), retry a dead one, or send what is due now from this process',
  },
  mcp: {
    synopsis: ['[--config <host module>] [--profile invoke[,author][,operator]] [--principal <id>] [--allow-inline] [--allow-deliveries [--delivery-secrets A,B]]'],
    summary: 'serve the runtime as MCP tools on stdio, acting as one principal',
    options: [
      ['--profile <list>', 'tool sets to expose, fixed at start (default invoke): invoke = workflow_search, _describe, _run, _run_get, _runs_list, _trace, _replay; author = workflow_nodes_list, _validate, _draft_get, _draft_put, _diff, _publish; operator = workflow_approve, _resolve, _cancel'],
      ['--principal <id>', 'who the session is: every run it launches acts as it, every approval, resolution, cancel and publish is recorded as it (else AGENT_WORKFLOW_MCP_PRINCIPAL, else $USER); no tool takes an identity argument'],
      ['--principal-scopes <list>', "the scopes the principal asks for at launch (default *); the host module's authorities may narrow or refuse them"],
      ['--allow-inline', 'workflow_run may run a template given inline (default: published revisions only)'],
      ['--allow-deliveries', 'workflow_run may take a delivery target (default: refused); non-public addresses stay refused when sending'],
      ['--delivery-secrets <list>', 'the environment variables a delivery target\'s secretRef may name (default none)'],
    ],
  },
  sandbox: { synopsis: ['serve [--port N] [--host H] [--token-file F] [--insecure-no-auth]'], summary: 'the script evaluation service' },
  help: { synopsis: ['[<command>]'], summary: 'this text, or the usage of one command' },
};

const commonOptions: [string, string][] = [
  ['--config <host module>', 'default ./agent-workflow.config.mjs'],
  ['--dir <state dir>', "default ./.agent-workflow (or the host module's dir)"],
  ['--otlp <url>', 'export spans of the runs this process commits to an OpenTelemetry collector (OTLP/HTTP, e.g. http://127.0.0.1:4318); else OTEL_EXPORTER_OTLP_ENDPOINT'],
  ['--store <location>', "postgres://… (one database shared by every worker) or a SQLite file (default <dir>/workflow.db); also AGENT_WORKFLOW_STORE or the host module's `store`"],
  ['-h, --help', 'the usage of the command'],
];

function optionLines(options: [string, string][]): string[] {
  return options.map(([o, d]) => `  ${o.padEnd(28)} ${d}`);
}

const exitCodeText = ['exit codes:', ...exitCodeLines.map((l) => `  ${l}`)].join('\n');

/** The overview: every command, the common options and the exit codes. */
export function overviewUsage(): string {
  const lines: string[] = ['usage: agent-workflow <command> [options]', '       agent-workflow <command> --help', '', 'commands:'];
  for (const [name, u] of Object.entries(usageTable)) {
    lines.push(`  ${name} ${u.synopsis[0]}`);
    lines.push(`      ${u.summary}`);
  }
  return [...lines, '', 'common options:', ...optionLines(commonOptions), '', exitCodeText].join('\n');
}

/** The usage of one command, or undefined when there is no such command. */
export function commandUsage(name: string): string | undefined {
  const u = Object.prototype.hasOwnProperty.call(usageTable, name) ? usageTable[name] : undefined;
  if (!u) return undefined;
  const lines = u.synopsis.map((s, i) => `${i === 0 ? 'usage:' : '      '} agent-workflow ${name} ${s}`);
  lines.push('', u.summary);
  if (u.options) lines.push('', 'options:', ...optionLines(u.options));
  lines.push('', 'common options:', ...optionLines(commonOptions), '', exitCodeText);
  return lines.join('\n');
}
