// The DingTalk adapter: the callback of an outgoing (enterprise) robot, `POST /v1/dingtalk/<bindingId>`
// on `agent-workflow serve --http`.
//
// DingTalk signs each callback with the robot's AppSecret: the headers `timestamp` (ms) and
// `sign` = base64(HMAC-SHA256(appSecret, `${timestamp}\n${appSecret}`)); a timestamp more than one
// hour from the clock is refused, as DingTalk documents. The message JSON carries `msgId`,
// `text.content`, `senderStaffId` / `senderId`, `conversationId` and `sessionWebhook`.
//
// The sender is identified through the binding: `config.senders` maps a sender id to the approver
// identity it acts as; anyone else is refused. Commands (the text of the message):
//
//   run [<json input>]           starts a run of the binding's target (the pipeline: dedupe on msgId, map, validate)
//   status <runId>               the status of a run this binding started
//   approve <runId> <nodeId>     approves the node as the sender's approver identity
//   reject <runId> <nodeId>      rejects it
//
// The reply is a DingTalk text message, the HTTP response itself: `{ msgtype: 'text', text: { content } }`.
// Verification failures are answered 401/404 with a JSON error, as for webhooks.
import { parseJsonBody } from './json-body.js';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { dingtalkSender, type DingtalkConfig, type WorkflowBinding } from './bindings.js';
import { TriggerRejected, type TriggerPipeline } from './ingress.js';
import { triggerLimits } from '../limits.js';
import type { TriggerHost } from './trigger-host.js';
import { activeBinding, type TriggerResponse } from './webhook.js';

/** The `sign` header of a callback at `timestamp`: what DingTalk computes. */
export function signDingtalk(appSecret: string, timestamp: number | string): string {
  return createHmac('sha256', appSecret).update(`${timestamp}\n${appSecret}`).digest('base64');
}

export function dingtalkText(content: string): { msgtype: 'text'; text: { content: string } } {
  return { msgtype: 'text', text: { content } };
}

const reply = (content: string): TriggerResponse => ({ status: 200, body: dingtalkText(content) });
const refusal = (status: number, code: string, message: string): TriggerResponse => ({ status, body: { error: { code, message } } });

type Headers = Record<string, string | string[] | undefined>;
const header = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/** A sign is the canonical base64 of 32 bytes, nothing else (Node's decoder would skip junk). */
const signPattern = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

function signMatches(appSecret: string, timestamp: string, given: string): boolean {
  const expected = Buffer.from(signDingtalk(appSecret, timestamp), 'base64');
  return timingSafeEqual(Buffer.from(given, 'base64'), expected);
}

const usage = 'commands: run [<json input>] | status <runId> | approve <runId> <nodeId> | reject <runId> <nodeId>';

export async function handleDingtalk(rt: TriggerHost, pipeline: TriggerPipeline, bindingId: string, headers: Headers, raw: Buffer, env: NodeJS.ProcessEnv = process.env): Promise<TriggerResponse> {
  // Parsed before the signature is checked (it names the msgId of the record): bounded first.
  const parsed = parseJsonBody(raw.toString('utf8'), triggerLimits.bodyDepthMax);
  const message: any = parsed.ok ? parsed.value : undefined;
  const msgId = typeof message?.msgId === 'string' ? message.msgId.slice(0, triggerLimits.sourceEventIdCharsMax) : undefined;
  const reject = async (status: number, code: string, text: string, binding?: WorkflowBinding, caller?: string) => {
    await pipeline.reject('dingtalk', bindingId, { code, message: text }, { ...(binding ? { bindingRevision: binding.revision } : {}), ...(msgId ? { sourceEventId: msgId } : {}), ...(caller ? { caller } : {}) });
    return status === 200 ? reply(text) : refusal(status, code, text);
  };
  const binding = await activeBinding(rt, bindingId, 'dingtalk');
  if (!binding) return reject(404, 'binding.not-found', `there is no published DingTalk binding ${bindingId}`);
  const config = binding.config as DingtalkConfig;
  const appSecret = env[config.appSecretRef];
  if (!appSecret) {
    pipeline.warn(`dingtalk binding ${bindingId}: the environment variable ${config.appSecretRef} named by its appSecretRef is not set in this process`);
    return reject(503, 'trigger.secret-missing', `binding ${bindingId} cannot verify requests: its AppSecret is not configured on this server`, binding);
  }
  const timestamp = header(headers, 'timestamp');
  const sign = header(headers, 'sign');
  if (timestamp === undefined || sign === undefined) return reject(401, 'dingtalk.sign-missing', 'the callback needs the timestamp and sign headers', binding);
  const ms = /^[0-9]{1,15}$/.test(timestamp) ? Number(timestamp) : NaN;
  const now = rt.kernel.now();
  if (!Number.isFinite(ms) || Math.abs(now - ms) > triggerLimits.dingtalkWindowMs) return reject(401, 'dingtalk.timestamp-expired', `the timestamp ${JSON.stringify(timestamp)} is more than ${triggerLimits.dingtalkWindowMs / 1000} s from the server's clock`, binding);
  if (!signPattern.test(sign)) return reject(401, 'dingtalk.bad-sign-encoding', 'the sign is not the base64 of an HMAC-SHA256 (44 characters, nothing before or after)', binding);
  if (!signMatches(appSecret, timestamp, sign)) return reject(401, 'dingtalk.bad-sign', 'the sign does not match the timestamp and the AppSecret', binding);
  // The sign covers the timestamp only, not the body: used once, by any worker, or a captured one
  // could carry another message. Kept until it is out of the window on either side of the clock.
  const claimed = await rt.triggerStorage.claimSignature({ source: 'dingtalk', signature: `${timestamp}:${sign}`, bindingId, expiresAt: ms + triggerLimits.dingtalkWindowMs }, now);
  if (!claimed) return reject(401, 'dingtalk.sign-replayed', 'this timestamp and sign were used before: each callback signature is accepted once', binding);
  if (message === undefined || typeof message !== 'object' || msgId === undefined) return reject(400, 'dingtalk.bad-message', 'the callback body is not a DingTalk message with a msgId', binding);
  const senderId: string | undefined = typeof message.senderStaffId === 'string' && message.senderStaffId ? message.senderStaffId : typeof message.senderId === 'string' ? message.senderId : undefined;
  const sender = senderId !== undefined && Object.prototype.hasOwnProperty.call(config.senders, senderId) ? dingtalkSender(config.senders[senderId]) : undefined;
  const identity = sender?.approver;
  if (sender === undefined || identity === undefined) return reject(200, 'dingtalk.sender-not-allowed', `sender ${senderId ?? '(none)'} is not allowed to use this robot`, binding, senderId);
  const caller = `dingtalk:${senderId}`;
  const event = { source: 'dingtalk' as const, sourceEventId: msgId, caller, occurredAt: ms };
  const content = typeof message.text?.content === 'string' ? message.text.content.trim() : '';
  const [command = '', ...rest] = content.split(/\s+/);
  const argText = content.slice(command.length).trim();

  switch (command.toLowerCase()) {
    case 'run': {
      let args: unknown = {};
      if (argText !== '') {
        const parsedArgs = parseJsonBody(argText, triggerLimits.bodyDepthMax);
        if (!parsedArgs.ok) return reject(200, 'dingtalk.bad-json', `run: the input is not JSON within bounds: ${parsedArgs.message}`, binding, caller);
        args = parsedArgs.value;
      }
      try {
        const admitted = await pipeline.admit(binding, {
          ...event,
          payload: { args, message, sender: { id: senderId, identity, nick: message.senderNick }, conversationId: message.conversationId, msgId },
        }, sender.authority !== undefined ? { authority: sender.authority } : {});
        return reply(admitted.deduplicated ? `run ${admitted.runId} was already started for this message` : `run ${admitted.runId} started`);
      } catch (err) {
        if (err instanceof TriggerRejected) return reply(`refused: ${err.code}: ${err.message}`);
        throw err;
      }
    }
    case 'status':
    case 'approve':
    case 'reject': {
      const [runId, nodeId] = rest;
      if (runId === undefined || (command.toLowerCase() !== 'status' && nodeId === undefined)) return reject(200, 'dingtalk.bad-command', usage, binding, caller);
      // Only the runs this binding started are visible through it.
      const [launched] = await rt.triggerStorage.listIngress({ bindingId: binding.id, runId, status: 'launched', limit: 1 });
      if (!launched) return reject(200, 'run.not-found', `there is no run ${runId} started through this robot`, binding, caller);
      await pipeline.received(binding, event, runId);
      try {
        if (command.toLowerCase() === 'status') {
          const view = await rt.getRun(runId);
          const projection = (await rt.store.getRun(runId))?.outcome as { approvals?: { nodeId: string }[] } | undefined;
          const waiting = view.status === 'paused' ? (projection?.approvals ?? []).map((a) => a.nodeId) : [];
          return reply(`run ${runId}: ${view.status}${view.pausedReason ? ` (${view.pausedReason})` : ''}${waiting.length ? `; waiting for approval of ${waiting.join(', ')}` : ''}`);
        }
        const approved = command.toLowerCase() === 'approve';
        const outcome = await rt.approve(runId, nodeId, { by: identity, approved, comment: `via DingTalk (${senderId})`, timeoutMs: triggerLimits.dingtalkApproveWaitMs });
        return reply(`${approved ? 'approved' : 'rejected'} ${nodeId} of run ${runId} as ${identity}; the run is ${outcome.status}`);
      } catch (err) {
        const e = err as { code?: string; message?: string };
        // Committed to the run's inbox: its owner applies it; the robot need not wait for that.
        if (e.code === 'command.pending') return reply(`${command.toLowerCase()} of ${nodeId} of run ${runId} is recorded as ${identity}; the run applies it when its owner reads its inbox`);
        return reply(`refused: ${e.code ?? 'error'}: ${e.message ?? String(err)}`);
      }
    }
    default:
      return reject(200, 'dingtalk.unknown-command', `unknown command ${JSON.stringify(command)}; ${usage}`, binding, caller);
  }
}
