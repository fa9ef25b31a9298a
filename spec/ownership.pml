/*
 * Run ownership: leases, fenced commits, the inbox, takeover and late receipts.
 *
 * One run, its journal and its lease row live in the store (global state below). Processes:
 *
 *   Proc(1), Proc(2)  worker processes. A worker claims the run when its lease is free or expired
 *                     (leases: conditional acquire that bumps the fencing epoch), takes it over
 *                     (reissues safe in-flight calls, turns unsafe ones into needs_attention),
 *                     then drives it: requests calls, dispatches them after the commit, commits
 *                     completions, applies inbox commands, renews the lease, or stops gracefully.
 *   Proc(OP)          the operator's command process (the CLI / SDK call of an operator). It
 *                     writes cancel and resolve-retry commands to the run's inbox; when no live
 *                     owner exists it acquires the lease itself and then acts as an owner (same
 *                     code as a worker) until it stops.
 *   Tool              the gateway and the tools behind it: executes dispatched calls (counting
 *                     the executions of the unsafe one), sends each outcome back to the run.
 *   Clock             lease expiry. The owner never learns about it: an owner stalled by a GC
 *                     pause or a partition keeps acting on its old epoch until a heartbeat or a
 *                     commit tells it otherwise. Expiry is a nondeterministic event that can fire
 *                     whenever the lease is held, which covers every heartbeat timing.
 *
 * Every commit is the kernel's `store.commit` (fenced commit): the fencing check (the commit's
 * epoch must be the lease's current epoch) atomically with the compare-and-set on `expectedSeq`.
 * An activation reads the journal and commits in one atomic step. That is exact for the fenced
 * protocol: a snapshot can only go stale through another commit accepted in the same epoch, and
 * only the process that acquired an epoch can pass the fencing check under it (P1), so the
 * expectedSeq check never fails here and splitting read and commit adds no journal behaviour.
 * What the model does interleave freely is everything between activations: a stalled owner
 * keeps its epoch and its staged dispatches, and acts on them whenever it runs again.
 * `seq` is `hidden` (kept out of the state vector): it only counts commits.
 *
 * Properties (assertions; compile pan with -DSAFETY):
 *   P1  no two owners commit in the same epoch. Every accepted commit records its committer
 *       under the lease epoch current when the store accepted it; a second committer under the
 *       same epoch is a violation.
 *   P2  an unknown outcome is never re-executed automatically: the unsafe call executes at most
 *       once plus once per operator resolve-retry that the run applied.
 *   P3  a late receipt never wakes a stopped run: once cancelled the run stays cancelled, and a
 *       call in needs_attention leaves it only through an applied resolve-retry.
 *
 * Mutant: `spin -DFENCING=0 -a ownership.pml` removes the fencing check from the store; spin
 * then finds a stale owner's commit accepted inside the next owner's epoch (P1).
 */

#ifndef FENCING
#define FENCING 1          /* 0: the store no longer compares the commit's epoch (mutant) */
#endif
#ifndef CHECK_P1
#define CHECK_P1 1         /* 0: leave P1 unchecked, to see what else a mutant breaks */
#endif

#define OP        3        /* owner id of the operator's command process; workers are 1 and 2 */
#ifndef MAXEPOCH
#define MAXEPOCH  3        /* bound on lease acquisitions (keeps the state space finite) */
#endif
#ifndef WORKER_EPOCHS
#define WORKER_EPOCHS 2    /* workers claim only while lease_epoch < WORKER_EPOCHS; the epochs
                              above are left to the operator's command process, so the model
                              reaches "worker takeover, then the operator acquires the lease to
                              apply a resolve-retry" without paying for a third worker epoch */
#endif
#define MAXCMD    2        /* inbox capacity: at most one cancel and one resolve-retry */

/* The two calls of the run and their effect classes. */
#define U 0                /* unsafe: effect `unknown` (non-idempotent) */
#define S 1                /* safe: read-only or idempotent */

/* Journal state of a call (capability.* events folded). */
#define IDLE      0        /* never requested */
#define REQUESTED 1        /* capability.requested durable, no completion journaled */
#define COMPLETED 2        /* capability.completed */
#define NA        3        /* capability.abandoned + node.needs-attention */

/* Run status. */
#define RUNNING   0
#define PAUSED    1        /* paused(needs_attention) */
#define CANCELLED 2
#define SUCCEEDED 3

/* Inbox commands. */
#define CANCEL    1
#define RETRY     2        /* runtime.resolve(runId, nodeId, {retry}) on the unsafe call */

/* Activation kinds (what the owner is committing). */
#define NOP       0
#define TAKEOVER  1        /* resume after restart / takeover */
#define REQUEST   2        /* node.started + capability.requested */
#define COMPLETE  3        /* capability.completed, or capability.late */
#define APPLY     4        /* apply the next inbox command */

/* ---- store: the lease row (`leases`) ---- */
byte lease_owner;          /* 0: free */
byte lease_epoch;          /* fencing epoch, +1 on every acquisition */
bool lease_expired;

/* ---- store: the run's journal, folded ---- */
hidden byte seq;           /* last committed seq; expectedSeq is checked against it */
byte status = RUNNING;
byte call[2];              /* IDLE / REQUESTED / COMPLETED / NA */
byte attempt[2];           /* attempt number = invocation id of the current request */
byte applied;              /* inbox commands applied (the inbox cursor is journaled) */
byte late;                 /* capability.late evidence recorded */

/* ---- store: the run's inbox (operator commands, in order) ---- */
byte inbox[MAXCMD];
byte inbox_len;
bool cancel_sent;
bool retry_sent;

/* ---- gateway ---- */
chan gateway  = [1] of { byte, byte };   /* dispatched calls: call, attempt */
chan outcomes = [2] of { byte, byte };   /* outcomes back to the run: call, attempt */

/* ---- ghost state for the properties ---- */
byte p1_epoch;                 /* P1: latest epoch under which a commit was accepted ... */
byte p1_committer;             /* ... and who made it. Epochs only grow, so this is the table
                                  epoch -> committer restricted to the only row still writable */
byte execs;                    /* P2: executions of the unsafe call */
byte retries;                  /* P2: resolve-retry commands applied */
bool was_cancelled;            /* P3 */

/* Lease free or expired, an epoch left to hand out, run not terminal. */
#define CLAIMABLE ((lease_owner == 0 || lease_expired) && lease_epoch < MAXEPOCH && \
                   status != CANCELLED && status != SUCCEEDED)

/*
 * Apply the activation `act` to the journal. Runs inside the commit's atomic step, after the
 * fencing and expectedSeq checks passed. `pu`/`ps` are the owner's staged dispatches: a call
 * is dispatched only after the commit holding its request is durable.
 */
inline apply() {
  if
  :: act == TAKEOVER ->
     if
     :: status == RUNNING || status == PAUSED ->
        if   /* safe in flight: reissue with the same invocation id */
        :: call[S] == REQUESTED -> ps = attempt[S]
        :: else
        fi;
        if   /* unsafe in flight: unknown outcome, never re-executed automatically */
        :: call[U] == REQUESTED -> call[U] = NA; status = PAUSED
        :: else
        fi
     :: else
     fi
  :: act == REQUEST ->
     call[c] = REQUESTED; attempt[c] = 1;
     if :: c == U -> pu = 1 :: else -> ps = 1 fi
  :: act == COMPLETE ->
     if
     :: (status == RUNNING || status == PAUSED) && call[c] == REQUESTED && attempt[c] == a ->
        call[c] = COMPLETED;
        if
        :: call[U] == COMPLETED && call[S] == COMPLETED -> status = SUCCEEDED
        :: else
        fi
     :: else ->
        late++     /* capability.late: evidence only, wakes nothing */
     fi
  :: act == APPLY ->
     if
     :: inbox[applied] == CANCEL && status != SUCCEEDED ->
        status = CANCELLED; was_cancelled = true
     :: inbox[applied] == RETRY && call[U] == NA && status == PAUSED ->
        /* node.resolved(retry): a new attempt, a new invocation id */
        attempt[U]++; call[U] = REQUESTED; pu = attempt[U]; retries++;
        status = RUNNING
     :: else        /* command no longer applicable: recorded, no effect */
     fi;
     applied++
  fi
}

/*
 * The fenced commit. The store refuses a commit whose epoch is not the lease's current one
 * (the process lost its lease: it stops owning, the facts of the activation are dropped) and,
 * atomically with that, a commit whose expectedSeq is stale (StoreError: facts dropped, the
 * kernel forgets the run, so its next activation treats in-flight work as after a restart).
 * Called inside the activation's atomic step.
 */
inline commit() {
  atomic {
    if
    :: FENCING && my != lease_epoch ->
       my = 0; recover = false
    :: else ->
       if
       :: seq != snap -> recover = true
       :: else ->
          was_na = (call[U] == NA);
          apply();
          seq++;
          if
          :: lease_epoch == p1_epoch ->
#if CHECK_P1
             assert(p1_committer == me)      /* P1 */
#endif
          :: else -> p1_epoch = lease_epoch; p1_committer = me
          fi;
          assert(!was_cancelled || status == CANCELLED);                          /* P3 */
          assert(!was_na || call[U] == NA || (act == APPLY && inbox[applied - 1] == RETRY)); /* P3 */
       fi
    fi;
    act = NOP; snap = 0; c = 0; a = 0; was_na = false   /* forget the activation */
  }
}

/* A worker (me = 1, 2) or the operator's command process (me = OP). */
proctype Proc(byte me) {
  byte my;         /* epoch this process believes it owns; 0: not an owner */
  bool recover;   /* next activation is a takeover (after acquisition or a failed commit) */
  byte pu, ps;    /* staged dispatches (attempt numbers), sent to the gateway after the commit */
  byte snap;      /* expectedSeq of the activation being computed */
  byte act;       /* the activation being computed */
  byte c, a;
  bool was_na;

end:
  do
  /* ---- operator: write commands to the inbox (never touches the journal directly) ---- */
  :: atomic { me == OP && !cancel_sent && inbox_len < MAXCMD ->
       inbox[inbox_len] = CANCEL; inbox_len++; cancel_sent = true }
  :: atomic { me == OP && !retry_sent && call[U] == NA && inbox_len < MAXCMD ->
       inbox[inbox_len] = RETRY; inbox_len++; retry_sent = true }

  /* ---- leases: acquire (conditional, bumps the epoch), heartbeat, graceful stop ---- */
  :: atomic { my == 0 && CLAIMABLE && (me != OP && lease_epoch < WORKER_EPOCHS || me == OP && applied < inbox_len) ->
       lease_owner = me; lease_epoch++; lease_expired = false;
       my = lease_epoch; recover = true }
  :: atomic { my != 0 ->
       if
       :: lease_owner == me && lease_epoch == my && !lease_expired -> skip   /* renewed */
       :: else -> my = 0; recover = false                                    /* lost */
       fi }
  :: atomic { my != 0 ->
       if
       :: lease_owner == me && lease_epoch == my -> lease_owner = 0
       :: else
       fi;
       my = 0; recover = false }

  /* ---- dispatch: only what a durable commit staged; may happen after a stall, even after
          the lease was lost (the gateway does not know about leases) ---- */
  :: atomic { pu != 0 && nfull(gateway) -> gateway!U,pu; pu = 0 }
  :: atomic { ps != 0 && nfull(gateway) -> gateway!S,ps; ps = 0 }

  /* ---- activations of the owner: read the journal, fenced commit ---- */
  /* takeover: first activation after acquiring (resume after restart) */
  :: atomic { my != 0 && recover ->
       recover = false;
       if
       :: (status == RUNNING || status == PAUSED) &&
          (call[U] == REQUESTED || call[S] == REQUESTED) ->
          snap = seq; act = TAKEOVER
       :: else            /* nothing in flight: nothing to commit */
       fi;
     if :: act != NOP -> commit() :: else fi }
  :: atomic { my != 0 && !recover && status == RUNNING && call[U] == IDLE ->
       /* start the unsafe call: node.started + capability.requested */
       snap = seq; act = REQUEST; c = U;
     commit() }
  :: atomic { my != 0 && !recover && status == RUNNING && call[S] == IDLE ->
       snap = seq; act = REQUEST; c = S;
     commit() }
  :: atomic { my != 0 && !recover && nempty(outcomes) ->
       /* an outcome reached the run: capability.completed, or capability.late. A fenced owner
          drops it: the new owner reissued the safe call and abandoned the unsafe one. */
       outcomes?c,a; snap = seq; act = COMPLETE;
     commit() }
  :: atomic { my != 0 && !recover && applied < inbox_len ->
       /* inbox: apply the next operator command, in order */
       snap = seq; act = APPLY;
     commit() }
  od
}

/* The gateway and its tools: every dispatched call is executed, then its outcome is sent back. */
active proctype Tool() {
  byte c, a;
end:
  do
  :: gateway?c,a ->
     if
     :: c == U -> execs++; assert(execs <= 1 + retries)   /* P2 */
     :: else
     fi;
end_reply:
     outcomes!c,a;
     c = 0; a = 0
  od
}

/* Lease expiry: fires at any time while the lease is held and not yet expired. */
active proctype Clock() {
end:
  do
  :: atomic { lease_owner != 0 && !lease_expired -> lease_expired = true }
  od
}

init {
  atomic {
    run Proc(1);
    run Proc(2);
    run Proc(OP)
  }
}
