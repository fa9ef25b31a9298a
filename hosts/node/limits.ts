// Bounds of the Node host's live stream and HTTP API, each with its unit last.

export const liveLimits = {
  /** Events a subscriber may hold untaken before it gets a gap marker and reads the journal instead. */
  bufferEventsDefault: 1024,
  /** The largest buffer a subscriber may ask for. */
  bufferEventsMax: 65_536,
  /** Events a run's feed reads from the store per read (it reads again until it has them all). */
  feedPageEventsMax: 1000,
  /**
   * With commit notifications (PostgreSQL NOTIFY), how often a followed run's record is still read:
   * a safety net for a notification connection that is lost without an error.
   */
  notifiedPollMs: 5000,
} as const;

/** Bounds of what the Node host journals. */
export const journalLimits = {
  /** `commitBytesMax` when the runtime options give none: bytes (UTF-8) of one commit's events. */
  commitBytesMaxDefault: 16 * 1024 * 1024,
  /** The smallest `commitBytesMax` a runtime accepts (a run's first commit must fit). */
  commitBytesMin: 65_536,
} as const;

export const httpLimits = {
  /** Events of one `GET /v1/runs/:id/events` page when `limit` is not given. */
  eventsPageDefault: 500,
  /** The largest `limit` of an events page. */
  eventsPageMax: 10_000,
  /** Runs of one `GET /v1/runs` list when `limit` is not given, and the largest `limit`. */
  runsListDefault: 50,
  runsListMax: 1000,
  /** Runs of one console list page (`GET /v1/console/runs`) when `limit` is not given, and the largest. */
  consolePageDefault: 50,
  consolePageMax: 200,
  /** Waiting runs the console's inbox reads (paused and running, newest first). */
  inboxRunsMax: 500,
  /** Events read from a run's end for the evidence of its needs_attention nodes. */
  inboxEvidenceEventsMax: 200,
  /** An operator action's JSON body. */
  actionBodyBytesMax: 256 * 1024,
  /** How long an operator action waits for its command to be applied before answering 202. */
  actionWaitMs: 10_000,
  /** A comment line on an idle event stream, so proxies and clients see the connection alive. */
  heartbeatMs: 15_000,
  /** A request's headers must arrive within this (node:http `headersTimeout`). */
  headersTimeoutMs: 10_000,
  /** A request, body included, must arrive within this (node:http `requestTimeout`): a trickled body is cut off. */
  requestTimeoutMs: 15_000,
  /** How often the server checks those two timeouts. */
  connectionsCheckingIntervalMs: 1_000,
  /** A progress item larger than this (as JSON) is not sent on an event stream. */
  progressBytesMax: 64 * 1024,
  /** An `--http-operators-file` larger than this is refused (a few thousand people fit). */
  operatorsFileBytesMax: 64 * 1024,
} as const;

export const telemetryLimits = {
  /** Finished spans waiting for the collector; a span that finds the queue full is dropped (and counted). */
  queueSpansMax: 2048,
  /** Spans of one OTLP export request. */
  exportBatchSpansMax: 512,
  /** How long finished spans wait for more before an export request, so requests carry batches. */
  exportDelayMs: 200,
  /** After a failed export, the next one waits this long (a dead collector is not hammered). */
  retryDelayMs: 2000,
  /** One export request may take this long before it counts as failed. */
  exportTimeoutMs: 5000,
  /** On close, what is queued is sent for at most this long, then dropped. */
  closeFlushMs: 1000,
  /** Runs whose spans are being built at once; the oldest is forgotten (and read again from seq 0 if it commits again). */
  runsTrackedMax: 4096,
  /** Events of the journal read per store read. */
  readPageEventsMax: 1000,
  /** Span events (pauses, waits, needs-attention) kept per span. */
  spanEventsMax: 64,
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

export const triggerLimits = {
  /** The largest request body a webhook or DingTalk callback may send. */
  bodyBytesMax: 1024 * 1024,
  /** Default webhook signature tolerance: a timestamp further than this from the clock is refused. */
  webhookToleranceSecondsDefault: 300,
  /** The widest webhook tolerance a binding may ask for. */
  webhookToleranceSecondsMax: 3600,
  /**
   * A DingTalk callback's `timestamp` must be this close to the clock. DingTalk documents one hour
   * as the most a receiver may accept; it stamps a callback when it sends it and does not resend
   * an old one, so only transit and clock skew need room: 5 minutes (NTP-synced clocks are within
   * seconds) keeps a captured sign short-lived while it awaits its single use.
   */
  dingtalkWindowMs: 5 * 60 * 1000,
  /** Length of a source event id (an `x-adw-event-id` header, a DingTalk msgId, a cron slot id). */
  sourceEventIdCharsMax: 256,
  /** The binding id kept on the record of a request to an unknown binding (the URL may name anything). */
  bindingIdCharsMax: 128,
  /**
   * `rejected` records of webhook and DingTalk requests no caller was verified for (unknown
   * binding, unsigned, bad signature, 405, bad encoding) kept in the ingress journal; older ones
   * are dropped, so unauthenticated traffic cannot grow the store without bound.
   */
  unverifiedRejectionsKeptMax: 200,
  /**
   * Nesting of a trigger's JSON body (and of a binding file), measured before parsing. The engine
   * takes a run input nested at most 64 levels (jsonInputLimits.runInputDepthMax) and a mapping
   * may put the whole body one level down in the input: 63.
   */
  bodyDepthMax: 63,
  /** Input mapping entries of one binding. */
  mappingEntriesMax: 256,
  /** Missed cron slots enumerated in one catch-up; older ones are not recorded one by one. */
  cronMissedSlotsMax: 1000,
  /** The largest `run-all` bound. */
  cronRunAllBoundMax: 100,
  /** Ingress records one `ingress list` answers when no limit is given, and at most. */
  ingressListDefault: 100,
  ingressListMax: 10_000,
  /** How long a DingTalk `approve` waits for the run's owner to apply the approval before replying. */
  dingtalkApproveWaitMs: 10_000,
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
  /**
   * A store file up to this size gets `PRAGMA quick_check` when a process opens it (a damaged one
   * is refused). Measured here: ~0.75 ms per MiB from the page cache (48 ms for 65 MiB, load
   * 0.4), so at most ~25 ms at open; a larger file is checked by `agent-workflow doctor` only.
   */
  quickCheckBytesMaxDefault: 32 * 1024 * 1024,
  /** The largest bound a store may be given (1 TiB: more is "always"); 0 turns the check off. */
  quickCheckBytesMaxLimit: 2 ** 40,
  /** Problems `doctor` lists (each kind); the counts are whole. */
  doctorProblemsMax: 100,
} as const;

export const pgLimits = {
  /**
   * After the server dropped the LISTEN connection (restart, failover, pg_terminate_backend): the
   * first wait before connecting again, doubled on every failed try up to the most. Work is not
   * delayed meanwhile (owners and workers poll); only wake-ups are.
   */
  listenRetryMsMin: 100,
  listenRetryMsMax: 5_000,
} as const;

/** Bounds of the CLI's numeric options (each refused outside its range with a usage error, exit 2). */
export const cliLimits = {
  /** `runs --limit`: the same bounds as `GET /v1/runs`. */
  runsListDefault: httpLimits.runsListDefault,
  runsListMax: httpLimits.runsListMax,
  /** `deliveries list --limit`. */
  deliveriesListMax: 10_000,
  /** `serve --max-runs`. */
  serveMaxRunsMax: 1_000_000,
  /** Milliseconds options (`--drain-ms`, `--delivery-*-ms`): the longest a Node timer can wait. */
  durationMsMax: 2_147_483_647,
  /** `--delivery-attempts`. */
  deliveryAttemptsMax: 1000,
  /** A TCP port (`serve --http`, `replay-web --port`); 0 picks a free one. */
  portMax: 65_535,
  /** Ids and indices given as numbers (`ingress list --after`, `resolve --item`, revisions): exact in a double. */
  wholeNumberMax: Number.MAX_SAFE_INTEGER,
} as const;

export const artifactLimits = {
  /** Artifacts listed per page by retention and key rotation (each page is one query; rows carry their bytes for rotation). */
  retentionPageArtifacts: 500,
  rotationPageArtifacts: 200,
  /** Unfinished runs read per page when retention collects the artifacts they name. */
  retentionPageRuns: 500,
  /** The longest retention time `agent-workflow gc --retention-days` takes (100 years). */
  retentionDaysMax: 36_500,
} as const;
