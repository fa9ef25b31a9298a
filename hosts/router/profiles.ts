/**
 * Per-cycle budgets of the cadence loop. Each phase does at most `batch` units of work per
 * round and at most `rounds` rounds per cycle (it stops early when a round finds less than a
 * batch). A unit is: one invocation converged (cancellation), one due wake-up (schedule), one
 * run activated (frontier; a round is one group commit), one request admitted (admission),
 * one attempt started (dispatch).
 */
export interface PhaseBudget {
  batch: number;
  rounds: number;
}

export interface RouterProfile {
  name: 'edge' | 'standalone';
  cancellation: PhaseBudget;
  schedule: PhaseBudget;
  frontier: PhaseBudget;
  admission: PhaseBudget;
  dispatch: PhaseBudget;
  /** Attempts admitted or running at once (local processes and in-process calls). */
  attemptsInFlightMax: number;
  /** Default period of the cadence timer. */
  cadenceMs: number;
  /**
   * Most linear memory a `core.script@1` evaluation may ask for (`config.limits.memoryBytes`; the
   * engine's default is 32 MiB). A plan whose scripts ask for more is refused at launch
   * (`router.script-budget`) rather than evaluated with less, which a recorded replay elsewhere
   * would not reproduce. Measured (test/router/host-script-memory.test.ts): scripts that fill
   * their 32 MiB take an edge router in a 128 MiB cgroup to a peak of ~102 MiB (a QuickJS module
   * grows to 16 MiB + 32 MiB); the same router in a 72 MiB cgroup is OOM-killed.
   */
  scriptMemoryBytesMax: number;
  /**
   * Growth of the memory V8 keeps outside its heap (commit buffers, wasm memories) after which
   * the router asks for a full garbage collection (external-memory.ts). Measured on a 5,000-item
   * foreach in a 128 MiB cgroup (docs/router.md, memory table).
   */
  collectAfterExternalBytes: number;
}

export const profiles: Readonly<Record<RouterProfile['name'], RouterProfile>> = {
  edge: {
    name: 'edge',
    cancellation: { batch: 4, rounds: 1 },
    schedule: { batch: 1, rounds: 1 },
    frontier: { batch: 1, rounds: 1 },
    admission: { batch: 1, rounds: 1 },
    dispatch: { batch: 1, rounds: 1 },
    attemptsInFlightMax: 2,
    cadenceMs: 50,
    scriptMemoryBytesMax: 32 * 1024 * 1024,
    collectAfterExternalBytes: 8 * 1024 * 1024,
  },
  standalone: {
    name: 'standalone',
    cancellation: { batch: 32, rounds: 4 },
    schedule: { batch: 16, rounds: 4 },
    frontier: { batch: 16, rounds: 4 },
    admission: { batch: 16, rounds: 4 },
    dispatch: { batch: 4, rounds: 1 },
    attemptsInFlightMax: 16,
    cadenceMs: 10,
    scriptMemoryBytesMax: 32 * 1024 * 1024,
    collectAfterExternalBytes: 8 * 1024 * 1024,
  },
};

export function profileNamed(name: string): RouterProfile {
  if (name !== 'edge' && name !== 'standalone') throw new Error(`unknown router profile ${JSON.stringify(name)} (edge or standalone)`);
  return profiles[name];
}

/** Runs `round(batch)` up to `rounds` times, stopping when a round did less than a batch. */
export async function withinBudget(budget: PhaseBudget, round: (batch: number) => number | Promise<number>): Promise<number> {
  let done = 0;
  for (let r = 0; r < budget.rounds; r++) {
    const n = await round(budget.batch);
    done += n;
    if (n < budget.batch) break;
  }
  return done;
}

/** Default memory of a script evaluation when its node names none (engine/limits.ts `scriptMemoryBytesDefault`). */
const scriptMemoryBytesDefault = 32 * 1024 * 1024;

/**
 * The scripts of a plan (`core.script@1` nodes and foreach bodies, in every template of its
 * closure) that ask for more memory than `max`: `<template key>/<node id>` and what they ask.
 */
export function scriptsOverBudget(plan: { templates: Record<string, { template?: unknown }> }, max: number): { node: string; memoryBytes: number }[] {
  const out: { node: string; memoryBytes: number }[] = [];
  type Node = { id?: string; uses?: string; config?: { limits?: { memoryBytes?: number }; body?: Node } };
  const asked = (node: Node | undefined) => (node?.uses === 'core.script@1' ? (node.config?.limits?.memoryBytes ?? scriptMemoryBytesDefault) : 0);
  for (const [key, entry] of Object.entries(plan.templates)) {
    const nodes = ((entry.template as { spec?: { nodes?: Node[] } } | undefined)?.spec?.nodes ?? []) as Node[];
    for (const node of nodes) {
      const memoryBytes = Math.max(asked(node), node.uses === 'core.foreach@1' ? asked(node.config?.body) : 0);
      if (memoryBytes > max) out.push({ node: `${key}/${node.id}`, memoryBytes });
    }
  }
  return out;
}
