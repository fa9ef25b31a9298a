// The `@gm-hz/agent-dag-workflow/triggers` entry: the binding catalog and the one ingress
// pipeline every source goes through. Each source's adapter has an entry of its own
// (`/triggers/webhook`, `/triggers/dingtalk`, `/triggers/cron`); docs/triggers.md.
export { BindingCatalog, BindingError, parseBindingSpec, mapInput, mappingProblems, resolvePointer, dingtalkSender } from './bindings.js';
export type { BindingSource, BindingSpec, BindingState, BindingProblem, WorkflowBinding, WebhookConfig, DingtalkConfig, CronConfig, InputField, MisfirePolicy, DeliveryTarget } from './bindings.js';
export { TriggerPipeline, TriggerRejected, ingressRunId } from './ingress.js';
export type { TriggerEvent, Admission, PipelineOptions } from './ingress.js';
export type { TriggerHost } from './trigger-host.js';
