/**
 * Worker thread of the evaluation service: one ScriptEvaluator, one
 * evaluation at a time. workerData: WorkerConfig. Messages in: {id, job}.
 * Messages out: {ready} once, then {id, outcome, wasmBytesHeld} per job.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ScriptEvaluator } from '../evaluator.js';
import type { EvaluateJob } from './protocol.js';
import { installWasmMemoryCap, wasmBytesHeld } from './wasm-budget.js';

export interface WorkerRequest {
  id: number;
  job: EvaluateJob;
}

export interface WorkerConfig {
  /** Maximum linear memory of each QuickJS module in this worker. */
  wasmMemoryBytesMax: number;
}

const port = parentPort;
if (!port) throw new Error('sandbox/service/worker.js must run in a worker thread');

// Before the evaluator creates its modules: every module memory is capped and tracked.
installWasmMemoryCap((workerData as WorkerConfig).wasmMemoryBytesMax);
const evaluator = await ScriptEvaluator.create();
port.on('message', (message: WorkerRequest) => {
  const { source, inputJson, limits } = message.job;
  const outcome = evaluator.evaluate(source, inputJson, limits);
  // Linear memory this thread still holds (live modules and dropped ones not yet
  // collected); the pool replaces the worker when it passes the retain bound.
  port.postMessage({ id: message.id, outcome, wasmBytesHeld: wasmBytesHeld() });
});
port.postMessage({ ready: true });
