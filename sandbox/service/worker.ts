/**
 * Worker thread of the evaluation service: one ScriptEvaluator, one
 * evaluation at a time. Messages in: {id, job}. Messages out: {ready} once,
 * then {id, outcome} per job.
 */
import { parentPort } from 'node:worker_threads';
import { ScriptEvaluator } from '../evaluator.js';
import type { EvaluateJob } from './protocol.js';

export interface WorkerRequest {
  id: number;
  job: EvaluateJob;
}

const port = parentPort;
if (!port) throw new Error('sandbox/service/worker.js must run in a worker thread');

const evaluator = await ScriptEvaluator.create();
port.on('message', (message: WorkerRequest) => {
  const { source, inputJson, limits } = message.job;
  const outcome = evaluator.evaluate(source, inputJson, limits);
  port.postMessage({ id: message.id, outcome });
});
port.postMessage({ ready: true });
