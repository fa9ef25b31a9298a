/**
 * Bounds of the router host. Every number carries its unit last. A router has a 128 MiB budget
 * for the whole process, so anything that is read into memory at once is bounded here.
 */

/** Largest record payload. One `commit()` call is one record, so this also bounds a group. */
export const recordBytesMax = 8 * 1024 * 1024;
/** Largest pinned plan. Plan and checkpoint of a run share one snapshot record in compaction. */
export const planBytesMax = 2 * 1024 * 1024;
/** Largest checkpoint. */
export const checkpointBytesMax = 4 * 1024 * 1024;
/** Most entries in one `commit()` call. */
export const commitEntriesMax = 1024;
/** Longest run status string (a projection; `paused(needs_attention)` must fit). */
export const statusBytesMax = 64;
/** Compaction packs the events of a run into records of at most this many bytes. */
export const compactEventsChunkBytes = 1024 * 1024;
/** Bytes appended since the last compaction after which `compactionDue()` says yes. */
export const compactAfterBytes = 64 * 1024 * 1024;
/** Most events returned by one `readEvents` page. */
export const readEventsLimitMax = 1000;
/** Most runs returned by one `listRuns` call. */
export const listRunsLimitMax = 1000;
/** Largest content-addressed artifact. */
export const artifactBytesMax = 16 * 1024 * 1024;
/** Longest artifact media type. */
export const mediaTypeBytesMax = 255;

/** Longest timeout a local tool may declare. */
export const toolTimeoutMsMax = 24 * 60 * 60 * 1000;
/** Most arguments of a local tool command line. */
export const toolArgsMax = 64;
/** Longest single argument after template substitution. */
export const toolArgBytesMax = 4096;
/** Largest stdout a local tool may print (its JSON output); the rest is dropped and the output refused. */
export const toolStdoutBytesMax = 1024 * 1024;
/** How much of the end of stderr a completion receipt keeps. */
export const toolStderrTailBytes = 4096;
/** Default grace between SIGTERM and SIGKILL in an exact stop. */
export const toolStopGraceMs = 2000;
/** Largest receipt record (a completion receipt holds the tool output). */
export const receiptBytesMax = toolStdoutBytesMax + 64 * 1024;

/** Commit durations kept for the latency summary (a ring; 8 bytes each). */
export const commitSamplesMax = 4096;
/**
 * Longest delay between two cycles of an idle router (a cycle that found nothing to do doubles
 * the delay from the profile's cadence up to this). Queued facts and operator actions bring it
 * back to the cadence at once, and a run's wake-up is never delayed past its time. Without it an
 * idle router woke 21 (edge) to 98 (standalone) times a second.
 */
export const idleCadenceMsMax = 1000;
/** Cycles between two passes that retire receipts the journal no longer needs. */
export const retireEveryCycles = 64;
/** Settled receipts that trigger a retire pass before `retireEveryCycles`. */
export const retireAfterSettled = 32;
