// The self-contained run export (`agent-workflow export`, `WorkflowRuntime.exportRun`): events,
// pinned plan and captured artifacts. Every host reads it with these checks; nothing in it is
// trusted before they pass.
import type { ExecutionPlan } from './types.js';
import { CodedError } from '../../engine/protocol/coded-error.js';
import { base64Bytes, openSealedWebCrypto, splitSealed } from './sealed-artifact.js';

export const exportFormat = 'agent-workflow.export/v1';

export interface RunExport {
  format: typeof exportFormat;
  run: { runId: string; status: string; lastSeq: number };
  plan: ExecutionPlan;
  events: any[];
  /** Captured artifacts by digest, base64; `sealed`: the envelope of an encrypted one (hosts/core/sealed-artifact.ts). */
  artifacts: Record<string, { mediaType: string; base64: string; sealed?: true }>;
}

export class ExportError extends CodedError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'ExportError';
  }
}

/** Checks the shape of an export read from a file. */
export function parseExport(value: unknown): RunExport {
  const v = value as Partial<RunExport>;
  if (!v || typeof v !== 'object' || v.format !== exportFormat) throw new ExportError('export.bad-format', `not a run export (format must be ${exportFormat})`);
  if (!v.plan || typeof v.plan !== 'object' || typeof v.plan.planHash !== 'string') throw new ExportError('export.bad-format', 'the export has no plan');
  if (!Array.isArray(v.events) || v.events.length === 0) throw new ExportError('export.bad-format', 'the export has no events');
  v.events.forEach((e, i) => {
    if (!e || typeof e !== 'object' || e.seq !== i + 1) throw new ExportError('export.bad-format', `event ${i + 1} is missing or out of order`);
  });
  if (v.artifacts !== undefined && (typeof v.artifacts !== 'object' || v.artifacts === null)) throw new ExportError('export.bad-format', 'artifacts must be an object');
  return { ...(v as RunExport), artifacts: v.artifacts ?? {} };
}

/** Parses the text of an export file. */
export function parseExportText(text: string): RunExport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ExportError('export.bad-json', `the file is not JSON: ${(err as Error).message}`);
  }
  return parseExport(value);
}

/** The key ids of an export's sealed artifacts (empty when none is sealed). */
export function sealedKeyIds(exported: RunExport): string[] {
  const ids = new Set<string>();
  for (const a of Object.values(exported.artifacts ?? {})) if (a.sealed) ids.add(splitSealed(base64Bytes(a.base64)).header.kid);
  return [...ids];
}

/**
 * The export with its sealed artifacts opened (WebCrypto), each checked against its digest;
 * `keys` answers a key id with its 32 bytes. Plain artifacts pass as they are.
 */
export async function openExportArtifacts(exported: RunExport, keys: (kid: string) => Uint8Array | undefined): Promise<RunExport> {
  const artifacts: RunExport['artifacts'] = {};
  for (const [digest, a] of Object.entries(exported.artifacts ?? {})) {
    if (!a.sealed) {
      artifacts[digest] = a;
      continue;
    }
    const plain = await openSealedWebCrypto(base64Bytes(a.base64), digest, keys);
    const hex = [...new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', plain as BufferSource))].map((b) => b.toString(16).padStart(2, '0')).join('');
    if (`sha256:${hex}` !== digest) throw new ExportError('export.artifact-mismatch', `artifact ${digest} opened to bytes of another digest`);
    let binary = '';
    for (const byte of plain) binary += String.fromCharCode(byte);
    artifacts[digest] = { mediaType: a.mediaType, base64: btoa(binary) };
  }
  return { ...exported, artifacts };
}

/** Captured artifacts as JSON text by digest: the form the engine's recorded replay reads. */
export function artifactTexts(exported: RunExport): Record<string, string> {
  const decoder = new TextDecoder();
  const out: Record<string, string> = {};
  for (const [digest, a] of Object.entries(exported.artifacts ?? {})) {
    // A sealed one is left out until it is opened (`openExportArtifacts`): inspection needs none,
    // and a recorded replay that needs it says it is missing.
    if (a.sealed) continue;
    const binary = atob(a.base64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    out[digest] = decoder.decode(bytes);
  }
  return out;
}
