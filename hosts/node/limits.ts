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

export const deliveryLimits = {
  /** The longest target URL. */
  urlCharsMax: 2048,
  /** Attempts of one delivery before it is dead-lettered, when not configured. */
  attemptsDefault: 8,
  /** The largest configurable number of attempts. */
  attemptsMax: 100,
  /** First retry delay; each later one doubles, with up to 50 % random jitter added. */
  backoffBaseMsDefault: 1000,
  /** No retry waits longer than this. */
  backoffMsMax: 15 * 60_000,
  /** One send (connect, headers and body) may take this long before it counts as failed. */
  sendTimeoutMsDefault: 10_000,
  /** How long a claimed delivery is held by its sender; a sender that died frees it after this. */
  leaseTtlMsDefault: 30_000,
  /** Deliveries claimed at once by one sender. */
  claimBatchMax: 16,
  /** How often an idle sender looks for due deliveries. */
  pollMsDefault: 500,
  /** A receiver's response body read for its error text, at most. */
  responseBytesMax: 64 * 1024,
  /** The message text of a DingTalk delivery, at most (the robot API refuses long ones). */
  dingtalkTextCharsMax: 4000,
  /** Rows of one `deliveries list`. */
  listDefault: 100,
  listMax: 10_000,
} as const;

export const sqliteLimits = {
  /**
   * SQLite's page cache per connection when not configured (SQLite's own default; better-sqlite3
   * builds SQLite with 16 MiB, which a long run fills and the process keeps).
   */
  cacheKibDefault: 2048,
  /** The smallest and the largest configurable page cache. */
  cacheKibMin: 64,
  cacheKibMax: 1_048_576,
} as const;
