// Following a run that is still going, through the HTTP API of `agent-workflow serve --http`
// (the page is then served by that API under /page/, so every request is same-origin).
//
// The page opens the run's export (`GET /v1/runs/:id/export`), then reads the run's Server-Sent
// Events (`GET /v1/runs/:id/events`, `Accept: text/event-stream`) after the export's last seq,
// with `fetch` and a reader of the body, because `EventSource` cannot send the bearer token. A
// cut connection is resumed with `Last-Event-ID`: the server then sends exactly the events after
// it, so nothing is missed or repeated. The stream ends after the run's terminal commit.

export interface LiveEvent {
  seq: number;
  type: string;
  [field: string]: unknown;
}

export interface LiveSource {
  runId: string;
  /** The API's bearer token (from the page URL's fragment `#token=…`, never sent in a URL). */
  token?: string;
}

const terminalTypes = new Set(['run.completed', 'run.failed', 'run.cancelled']);
/** After a cut connection, the next attempt waits this long. */
const reconnectDelayMs = 500;

export function authHeaders(source: LiveSource): Record<string, string> {
  return source.token ? { authorization: `Bearer ${source.token}` } : {};
}

/** The frames of a Server-Sent Events body: `{ id?, event, data }`, comments dropped. */
async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id?: string; event: string; data: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        return;
      }
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id: string | undefined;
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') id = text;
          else if (field === 'event') event = text;
          else if (field === 'data') data.push(text);
        }
        if (data.length > 0) yield { ...(id !== undefined ? { id } : {}), event, data: data.join('\n') };
      }
    }
  } finally {
    // Left early (an error): the connection is given up; at the end of the body it is over anyway.
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}

/**
 * Calls `onEvents` with each batch of committed events after `afterSeq`, in seq order, until the
 * run's terminal event came (resolves true) or `signal` stops it (resolves false).
 */
export async function followEvents(source: LiveSource, afterSeq: number, onEvents: (events: LiveEvent[]) => void, signal: AbortSignal): Promise<boolean> {
  let last = afterSeq;
  const url = `../v1/runs/${encodeURIComponent(source.runId)}/events`;
  while (!signal.aborted) {
    let ended = false;
    try {
      const response = await fetch(url, { headers: { accept: 'text/event-stream', 'last-event-id': String(last), ...authHeaders(source) }, signal, cache: 'no-store' });
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      for await (const frame of sseFrames(response.body)) {
        if (frame.id === undefined) {
          if (frame.event === 'stream.error') throw new Error(JSON.parse(frame.data).message ?? 'the stream failed');
          continue; // live-only progress: not part of the journal
        }
        const event = JSON.parse(frame.data) as LiveEvent;
        if (event.seq !== last + 1) continue; // never expected: the server resumes after Last-Event-ID
        last = event.seq;
        onEvents([event]);
        if (terminalTypes.has(event.type)) ended = true;
      }
      // The server closes the stream after the run's terminal commit (which may hold a checkpoint).
      if (ended) return true;
    } catch (err) {
      if (signal.aborted) return false;
      if (ended) return true;
      console.warn(`live stream of ${source.runId}: ${(err as Error).message}; reconnecting after seq ${last}`);
    }
    await new Promise((r) => setTimeout(r, reconnectDelayMs));
  }
  return false;
}

/** The run's status as its run events say, for the header while the run goes on. */
export function liveStatusOf(status: { status: string; pausedReason?: string }, event: LiveEvent): { status: string; pausedReason?: string } {
  const payload = (event.payload ?? {}) as { reason?: string };
  switch (event.type) {
    case 'run.started':
    case 'run.resumed':
      return { status: 'running' };
    case 'run.paused':
      return { status: 'paused', ...(payload.reason ? { pausedReason: payload.reason } : {}) };
    case 'run.completed':
      return { status: 'completed' };
    case 'run.failed':
      return { status: 'failed' };
    case 'run.cancelled':
      return { status: 'cancelled' };
    default:
      return status;
  }
}
