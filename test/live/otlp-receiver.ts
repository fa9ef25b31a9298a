// An OTLP/HTTP traces receiver on loopback for the telemetry tests: a node:http server that
// decodes the exporter's JSON requests and keeps every span.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  status?: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  serviceName: unknown;
}

function attributeMap(list: { key: string; value: Record<string, unknown> }[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = Object.values(a.value)[0];
  return out;
}

/** An OTLP/HTTP traces receiver: keeps every span of every request. */
export async function receiver(): Promise<{ url: string; spans: ReceivedSpan[]; requests: string[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        const serviceName = attributeMap(rs.resource?.attributes)['service.name'];
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, attributes: attributeMap(s.attributes), serviceName });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, spans, requests, close: () => new Promise((r) => server.close(() => r())) };
}

