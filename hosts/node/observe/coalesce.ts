// Followers of the commit loop (live streams, the span exporter) never read the journal on the
// commit's own turn: a burst of commits asks for one read, on the next turn of the event loop.

/** A function that runs `fn` once on the next turn, however many times it is called before then. */
export function coalesced(fn: () => void): () => void {
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      fn();
    });
  };
}
