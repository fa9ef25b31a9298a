// What the live-run benchmarks share: their command-line options and the run they time, a
// foreach of idempotent echo calls (16 at a time) over `input.items`.

/** `--name value` from the command line, else `dflt`. */
export const arg = (name, dflt) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : dflt);

/** The template of the timed run, named `id`. */
export function echoSweep(id) {
  return {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id },
    spec: {
      requires: ['tool:echo'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 16, maxItems: 10_000, body: { uses: 'tool.call@1', config: { tool: 'echo', idempotent: true } } }, inputs: { items: { source: 'input', path: '/items' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'end' },
      ],
    },
  };
}
