// The journal protocol is a union: reading an event type the engine never emits, or a payload
// member an event does not have, does not compile. Checked with the TypeScript compiler on a
// few lines that use engine/protocol (no build, no component).
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const protocol = fileURLToPath(new URL('../../engine/protocol/index.ts', import.meta.url));

/** The compiler's error codes for a module that imports the protocol and runs `body`. */
function errorsOf(body: string): number[] {
  const file = fileURLToPath(new URL('./probe.ts', import.meta.url));
  const text = `import type { EventEnvelope, PayloadOf } from ${JSON.stringify(protocol.replace(/\.ts$/, '.js'))};\n${body}\n`;
  const options: ts.CompilerOptions = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [], skipLibCheck: true };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  host.readFile = (name) => (name === file ? text : read(name));
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || exists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => d.code);
}

describe('the typed journal protocol', () => {
  it('accepts what the engine emits', () => {
    expect(errorsOf(`export const waiting = (e: EventEnvelope) => e.type === 'node.waiting' && e.payload.reason === 'approval';
export const request: PayloadOf<'capability.requested'> = { invocationId: 'iv-1', kind: 'tool', name: 'search', effect: 'unknown', input: {} };`)).toEqual([]);
  });

  it('refuses an event type the engine never emits', () => {
    // TS2367: the comparison has no overlap with the union of event types.
    expect(errorsOf(`export const rejected = (e: EventEnvelope) => e.type === 'approval.rejected';`)).toEqual([2367]);
  });

  it('refuses a payload member the event does not have, and a missing one', () => {
    expect(errorsOf(`export const kind = (e: EventEnvelope) => e.type === 'node.waiting' && e.payload.kind === 'approval';`)).toEqual([2339]);
    expect(errorsOf(`export const p: PayloadOf<'node.failed'> = {};`)).toEqual([2741]);
  });
});
