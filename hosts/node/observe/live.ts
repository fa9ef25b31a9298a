/**
 * The live stream of a run: its committed events, in seq order, exactly once, each only after
 * the commit that holds it is durable.
 *
 * The journal is the authority. One `RunFeed` per run and runtime reads each new commit from the
 * store once (woken by the kernel when this process commits; for commits of other processes, by
 * the store's commit notifications where it has them — PostgreSQL's NOTIFY — else by polling the
 * store's run record) and hands the events to every subscriber. A subscriber
 * keeps at most `bufferEventsMax` events it has not taken yet; when the feed would overflow that
 * buffer, the subscriber gets a gap marker and reads what it missed from the journal itself, then
 * joins the feed again. A slow subscriber therefore never holds the run or the other subscribers
 * up, and still sees every committed event once and in order.
 *
 * Tools and agents may also report live-only progress (`context.progress(data)`): handed to the
 * subscribers of this process that are level with the feed, never journaled, and lossy.
 *
 * A subscriber starts in that catch-up mode: the events after `afterSeq` that are already
 * committed come from the journal, then the feed takes over without a seam.
 *
 * The stream ends after the commit that holds the run's terminal event (`run.completed`,
 * `run.failed`, `run.cancelled`; the commit may also hold its checkpoint). A paused run may continue (an approval, a resume), so on a paused run the
 * stream stays open until the caller stops (`signal`, or leaving the `for await`).
 */
import { isTerminalStatus } from '../../../engine/protocol/statuses.js';
import type { Kernel } from '../../core/kernel.js';

/** What live streams follow of the kernel: a run's commits by this process, once durable. */
export type CommitWatch = Pick<Kernel, 'watch'>;
import type { Gateway } from '../../core/gateway.js';
import type { JournalStore } from '../../core/store.js';
import { liveLimits } from '../limits.js';
import { coalesced } from './coalesce.js';

/** A committed event of the run's journal. */
export interface LiveEvent {
  kind: 'event';
  seq: number;
  event: { seq: number; type: string; [field: string]: unknown };
}

/**
 * The subscriber fell behind the live feed by more than its buffer: the feed's events from
 * `afterSeq + 1` on were dropped for it and are read from the journal instead. Nothing is missed.
 */
export interface LiveGap {
  kind: 'gap';
  afterSeq: number;
}

/**
 * Progress a tool or agent reported while its call runs (`context.progress(data)`): live only,
 * never journaled, and lossy (dropped when the subscriber's buffer is full or it is reading the
 * journal to catch up). It may come before the feed has handed out the call's
 * `capability.requested` event.
 */
export interface LiveProgress {
  kind: 'progress';
  journaled: false;
  nodeId: string;
  invocationId: string;
  item?: number;
  data: unknown;
  /**
   * 1, 2, 3… over the run's progress in this process, numbered before any subscriber drops one:
   * a client orders progress by it and sees a gap where it skips (progress is lossy).
   */
  liveSeq: number;
}

export type LiveItem = LiveEvent | LiveGap | LiveProgress;

export interface LiveOptions {
  /** Start after this seq (default 0: from the run's first event). */
  afterSeq?: number;
  /** Stops the stream: the iterator ends without an error. */
  signal?: AbortSignal;
  /** Events this subscriber may hold untaken before it gets a gap marker (default 1024). */
  bufferEventsMax?: number;
}

const terminalEventTypes: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

function isTerminalEvent(event: { type: string }): boolean {
  return terminalEventTypes.has(event.type);
}

function parseEvent(line: string): LiveEvent['event'] {
  return JSON.parse(line) as LiveEvent['event'];
}

class Subscriber {
  readonly items: LiveItem[] = [];
  /** Seq of the last event put in `items` (or taken). */
  cursor: number;
  /** Reading from the journal until it reaches the feed. */
  catchingUp = true;
  /** It read the run's terminal event from the journal. */
  terminalSeen = false;
  /** It has every event up to the end of the run's terminal commit. */
  ended = false;
  private wake: (() => void) | undefined;

  constructor(
    afterSeq: number,
    readonly bufferEventsMax: number,
  ) {
    this.cursor = afterSeq;
  }

  /** An event of the feed: kept, skipped (already seen, or reading the journal), or a gap. */
  offer(seq: number, event: LiveEvent['event']): void {
    if (this.catchingUp || this.ended || seq <= this.cursor) return;
    if (seq !== this.cursor + 1 || this.items.length >= this.bufferEventsMax) {
      // The gap marker takes one slot beyond the bound: it is the last thing kept until the
      // subscriber has read the journal up to the feed again.
      this.items.push({ kind: 'gap', afterSeq: this.cursor });
      this.catchingUp = true;
    } else {
      this.items.push({ kind: 'event', seq, event });
      this.cursor = seq;
    }
    this.notify();
  }

  /** Live-only progress: kept when the subscriber is level with the feed and has room. */
  offerProgress(progress: LiveProgress): void {
    if (this.catchingUp || this.ended || this.items.length >= this.bufferEventsMax) return;
    this.items.push(progress);
    this.notify();
  }

  notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  waitForItems(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/** The new commits of one run, read once and handed to every subscriber of this runtime. */
class RunFeed {
  readonly subscribers = new Set<Subscriber>();
  /** Seq of the last event handed out; -1 until the run's record was read. */
  seq = -1;
  /** The last `liveSeq` given to a call's progress on this run. */
  liveSeq = 0;
  /** The terminal event was read, and everything the store had with it. */
  ended = false;
  private terminalSeen = false;
  private reading = false;
  private readAgain = false;
  private poll: ReturnType<typeof setTimeout> | undefined;
  private readonly unwatch: () => void;
  private stopped = false;
  private failure: unknown;
  /** Settles when the run's record was read (the feed's starting seq is known). */
  ready: Promise<void> = Promise.resolve();

  constructor(
    readonly runId: string,
    private readonly store: JournalStore,
    kernel: CommitWatch,
    /** How often the run record is read for commits of other processes (rarely, when they are notified). */
    private readonly pollMs: () => number,
    private readonly onIdle: () => void,
  ) {
    // Called after a commit of the run by this process is durable, inside the kernel's commit
    // loop: the read waits for the next turn of the event loop, off the commit path.
    this.unwatch = kernel.watch(runId, () => this.readSoon());
  }

  async start(): Promise<void> {
    const record = await this.store.getRun(this.runId);
    if (!record) throw Object.assign(new Error(`run ${this.runId} does not exist`), { code: 'run.not-found' });
    if (this.seq < 0) this.seq = record.lastSeq;
    if (isTerminalStatus(record.status)) this.ended = true;
    else this.schedulePoll();
  }

  /** The failure that stopped the feed (a store that cannot be read), for its subscribers. */
  get error(): unknown {
    return this.failure;
  }

  private schedulePoll(): void {
    if (this.stopped || this.ended) return;
    this.poll = setTimeout(() => {
      this.poll = undefined;
      void this.checkStore();
    }, this.pollMs());
  }

  /** A commit of the run by any process was notified by the store. */
  notified(lastSeq: number): void {
    if (lastSeq > this.seq) this.readSoon();
  }

  /** Commits of other processes: the run record's last seq moved. */
  private async checkStore(): Promise<void> {
    try {
      const record = await this.store.getRun(this.runId);
      if (record && record.lastSeq > this.seq) await this.read();
    } catch (err) {
      this.fail(err);
      return;
    }
    this.schedulePoll();
  }

  private readonly readSoon = coalesced(() => void this.read());

  async read(): Promise<void> {
    if (this.stopped || this.ended || this.seq < 0) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    try {
      do {
        this.readAgain = false;
        for (;;) {
          const page = await this.store.readEvents(this.runId, this.seq, liveLimits.feedPageEventsMax);
          for (const line of page.events) {
            const event = parseEvent(line);
            if (event.seq !== this.seq + 1) throw new Error(`live feed of run ${this.runId}: the journal gave seq ${event.seq} after ${this.seq}`);
            this.seq = event.seq;
            for (const s of this.subscribers) s.offer(event.seq, event);
            if (isTerminalEvent(event)) this.terminalSeen = true;
          }
          if (!page.more || this.stopped) break;
        }
        // Commits are atomic and the store had nothing more: the terminal commit is read whole.
        if (this.terminalSeen) this.ended = true;
      } while (this.readAgain && !this.ended && !this.stopped);
    } catch (err) {
      this.fail(err);
    } finally {
      this.reading = false;
    }
    for (const s of this.subscribers) s.notify();
  }

  private fail(err: unknown): void {
    this.failure = err;
    this.stop();
    for (const s of this.subscribers) s.notify();
  }

  remove(s: Subscriber): void {
    this.subscribers.delete(s);
    if (this.subscribers.size === 0) {
      this.stop();
      this.onIdle();
    }
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unwatch();
    if (this.poll) clearTimeout(this.poll);
    this.poll = undefined;
  }

  get isStopped(): boolean {
    return this.stopped;
  }
}

/** The live streams of one runtime: one feed per followed run, any number of subscribers on it. */
export class LiveStreams {
  private readonly feeds = new Map<string, RunFeed>();
  private closed = false;
  /** The store's commit notifications, subscribed to with the first feed (stores that have them). */
  private notifications: Promise<void> | undefined;
  private unsubscribe: (() => unknown) | undefined;
  private notified = false;

  constructor(
    private readonly store: JournalStore,
    private readonly kernel: CommitWatch,
    private readonly pollMs: number,
  ) {}

  /**
   * While commits are notified, the run records are read only as a safety net, every
   * `notifiedPollMs` (or `pollMs` if that is longer); without notifications, every `pollMs`.
   */
  private feedPollMs(): number {
    return this.notified ? Math.max(this.pollMs, liveLimits.notifiedPollMs) : this.pollMs;
  }

  /** Listens for commits before the first feed reads its run record, so no commit falls between. */
  private listen(): Promise<void> {
    const subscribe = this.store.subscribeCommits?.bind(this.store);
    if (!subscribe) return Promise.resolve();
    this.notifications ??= Promise.resolve(
      subscribe(
        (runId, lastSeq) => this.feeds.get(runId)?.notified(lastSeq),
        () => {
          // Back to polling; the next feed listens again.
          this.notified = false;
          this.notifications = undefined;
          const stop = this.unsubscribe;
          this.unsubscribe = undefined;
          void Promise.resolve(stop?.()).catch(() => undefined);
        },
      ),
    ).then(
      (stop) => {
        if (this.closed) return void Promise.resolve(stop()).catch(() => undefined);
        this.unsubscribe = stop;
        this.notified = true;
      },
      () => {
        // The store could not listen: the feeds poll.
        this.notifications = undefined;
      },
    );
    return this.notifications;
  }

  private async feedOf(runId: string): Promise<RunFeed> {
    await this.listen();
    const existing = this.feeds.get(runId);
    if (existing && !existing.isStopped) {
      await existing.ready;
      return existing;
    }
    const feed = new RunFeed(runId, this.store, this.kernel, () => this.feedPollMs(), () => {
      if (this.feeds.get(runId) === feed) this.feeds.delete(runId);
    });
    this.feeds.set(runId, feed);
    feed.ready = feed.start();
    try {
      await feed.ready;
    } catch (err) {
      feed.stop();
      if (this.feeds.get(runId) === feed) this.feeds.delete(runId);
      throw err;
    }
    return feed;
  }

  /** The run's committed events after `afterSeq`, then its new commits as they become durable. */
  async *subscribe(runId: string, options: LiveOptions = {}): AsyncGenerator<LiveItem, void, undefined> {
    if (this.closed) throw Object.assign(new Error('the runtime is closed'), { code: 'runtime.closed' });
    const afterSeq = options.afterSeq ?? 0;
    const bufferEventsMax = options.bufferEventsMax ?? liveLimits.bufferEventsDefault;
    if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) throw Object.assign(new Error('afterSeq must be a non-negative integer'), { code: 'live.bad-option' });
    if (!Number.isSafeInteger(bufferEventsMax) || bufferEventsMax < 1 || bufferEventsMax > liveLimits.bufferEventsMax) {
      throw Object.assign(new Error(`bufferEventsMax must be an integer from 1 to ${liveLimits.bufferEventsMax}`), { code: 'live.bad-option' });
    }
    const feed = await this.feedOf(runId);
    const sub = new Subscriber(afterSeq, bufferEventsMax);
    feed.subscribers.add(sub);
    const signal = options.signal;
    try {
      for (;;) {
        if (signal?.aborted || this.closed) return;
        const item = sub.items.shift();
        if (item) {
          yield item;
          continue;
        }
        if (sub.ended) return;
        if (sub.catchingUp) {
          await this.catchUp(runId, sub, feed);
          continue;
        }
        if (feed.error !== undefined) throw feed.error;
        // The run ended before this subscriber's `afterSeq`, or the feed was stopped.
        if (feed.isStopped || (feed.ended && sub.cursor >= feed.seq)) return;
        await sub.waitForItems(signal);
      }
    } finally {
      feed.remove(sub);
    }
  }

  /** One page of the journal after the subscriber's cursor; back on the feed once it reached it. */
  private async catchUp(runId: string, sub: Subscriber, feed: RunFeed): Promise<void> {
    const page = await this.store.readEvents(runId, sub.cursor, sub.bufferEventsMax);
    for (const line of page.events) {
      const event = parseEvent(line);
      if (event.seq !== sub.cursor + 1) throw new Error(`live stream of run ${runId}: the journal gave seq ${event.seq} after ${sub.cursor}`);
      sub.items.push({ kind: 'event', seq: event.seq, event });
      sub.cursor = event.seq;
      if (isTerminalEvent(event)) sub.terminalSeen = true;
    }
    // The rest of the terminal commit (its checkpoint) came with it: commits are atomic.
    if (sub.terminalSeen && !page.more) {
      sub.ended = true;
      return;
    }
    // Synchronous from here to the flip: every event the feed hands out later is after `feed.seq`.
    if (!page.more && feed.seq >= 0 && sub.cursor >= feed.seq) sub.catchingUp = false;
  }

  /** Progress of a call of `runId`, for the run's subscribers in this process (if any). */
  progress(call: { runId: string; nodeId: string; invocationId: string; item?: number }, data: unknown): void {
    const feed = this.feeds.get(call.runId);
    if (!feed || feed.isStopped) return;
    const item: LiveProgress = { kind: 'progress', journaled: false, nodeId: call.nodeId, invocationId: call.invocationId, ...(call.item !== undefined ? { item: call.item } : {}), data, liveSeq: ++feed.liveSeq };
    for (const s of feed.subscribers) s.offerProgress(item);
  }

  /** Ends every stream (the runtime closes). */
  close(): void {
    this.closed = true;
    const stop = this.unsubscribe;
    this.unsubscribe = undefined;
    void Promise.resolve(stop?.()).catch(() => undefined);
    for (const feed of this.feeds.values()) {
      feed.stop();
      for (const s of feed.subscribers) s.notify();
    }
    this.feeds.clear();
  }
}

/** A gateway whose calls get `context.progress`, handed to the live streams `streams()` gives. */
export function withLiveProgress(gateway: Gateway, streams: () => LiveStreams | undefined): Gateway {
  return {
    effects: () => gateway.effects(),
    execute: (request, context) =>
      gateway.execute(request, {
        ...context,
        progress: (data) => streams()?.progress({ runId: request.runId, nodeId: request.nodeId, invocationId: request.invocationId, ...(request.item !== undefined ? { item: request.item } : {}) }, data),
      }),
  };
}
