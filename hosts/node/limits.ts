// Bounds of the Node host's live stream and HTTP API, each with its unit last.

export const liveLimits = {
  /** Events a subscriber may hold untaken before it gets a gap marker and reads the journal instead. */
  bufferEventsDefault: 1024,
  /** The largest buffer a subscriber may ask for. */
  bufferEventsMax: 65_536,
  /** Events a run's feed reads from the store per read (it reads again until it has them all). */
  feedPageEventsMax: 1000,
} as const;

export const httpLimits = {
  /** Events of one `GET /v1/runs/:id/events` page when `limit` is not given. */
  eventsPageDefault: 500,
  /** The largest `limit` of an events page. */
  eventsPageMax: 10_000,
  /** Runs of one `GET /v1/runs` list when `limit` is not given, and the largest `limit`. */
  runsListDefault: 50,
  runsListMax: 1000,
  /** A comment line on an idle event stream, so proxies and clients see the connection alive. */
  heartbeatMs: 15_000,
  /** A progress item larger than this (as JSON) is not sent on an event stream. */
  progressBytesMax: 64 * 1024,
} as const;
