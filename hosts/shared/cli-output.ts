// What every command line of the package writes: one JSON document per line on stdout, tagged
// with the CLI's api version and a kind, and free-text progress on stderr.

/** A `print(kind, body)` that writes `{ apiVersion, kind, ...body }` as one line on stdout. */
export function printer(apiVersion: string): (kind: string, body: Record<string, unknown>) => void {
  return (kind, body) => {
    process.stdout.write(`${JSON.stringify({ apiVersion, kind, ...body })}\n`);
  };
}

/** One line of progress on stderr (stdout carries only documents). */
export function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}
