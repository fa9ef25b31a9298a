// Types of the component's imports, as the guest sees them.
declare module 'gm-hz:workflow/journal@1.0.0' {
  export interface RunTail { plan: Uint8Array; checkpoint?: Uint8Array; events: Uint8Array; lastSeq: number }
  export function load(runId: string): RunTail | undefined;
  export function commit(request: {
    runId: string;
    expectedSeq: number;
    lastSeq: number;
    events: Uint8Array;
    checkpoint?: Uint8Array;
    plan?: Uint8Array;
    status: string;
  }): void;
}
declare module 'gm-hz:workflow/gateway@1.0.0' {
  export function request(request: Uint8Array): void;
  export function cancel(invocationId: string, reason: string): void;
}
declare module 'gm-hz:workflow/sandbox@1.0.0' {
  export interface ScriptLimits { fuel: number; memoryBytes: number; stackBytes: number; outputBytes: number }
  export function evaluate(source: string, input: Uint8Array, limits: ScriptLimits): { output: Uint8Array; fuelUsed: number };
  export function checkSyntax(source: string): { code: string; message: string; line?: number } | undefined;
}
declare module 'gm-hz:workflow/log@1.0.0' {
  export function write(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}
