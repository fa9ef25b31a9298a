// Types of the component's imports, as the guest sees them.
declare module 'gm-hz:workflow/journal@1.0.0' {
  export interface RunTail { plan: string; checkpoint?: string; events: string; lastSeq: number }
  export function load(runId: string): RunTail | undefined;
  export function commit(request: { runId: string; expectedSeq: number; lastSeq: number; events: string; checkpoint?: string; status: string }): void;
}
declare module 'gm-hz:workflow/gateway@1.0.0' {
  export function request(request: string): void;
  export function cancel(invocationId: string, reason: string): void;
}
declare module 'gm-hz:workflow/sandbox@1.0.0' {
  export interface ScriptLimits { fuel: number; memoryBytes: number; stackBytes: number; outputBytes: number }
  export function evaluate(source: string, input: string, limits: ScriptLimits): { output: string; fuelUsed: number };
  export function checkSyntax(source: string): { code: string; message: string; line?: number } | undefined;
}
declare module 'gm-hz:workflow/log@1.0.0' {
  export function write(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}
