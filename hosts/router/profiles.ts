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
