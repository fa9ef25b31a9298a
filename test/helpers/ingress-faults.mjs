// Crash injection into the ingress transaction of a trigger admission, for tests only. A test
// starts a CLI process with `node --import <this file>` and AGENT_WORKFLOW_FAULT_INGRESS set:
//
//   kill-before-commit  SIGKILL inside the admission's transaction, once the queued run and the
//                       `launched` record are written and before they commit
//   kill-after-commit   SIGKILL right after the commit, before the HTTP answer
//
// It wraps the stores' `admit` from outside; the product has no fault branch of its own.
import { PgTriggerStorage } from '../../dist/hosts/node/stores/pg/triggers.js';
import { SqliteTriggerStorage } from '../../dist/hosts/node/stores/sqlite/triggers.js';

const fault = process.env.AGENT_WORKFLOW_FAULT_INGRESS;
const kill = () => process.kill(process.pid, 'SIGKILL');

/** Runs `admit` with the storage's last write of a new admission followed by `after`. */
function withLastWrite(storage, method, after, admit) {
  const own = storage.ownership;
  const original = method === 'record' ? storage.record : own[method];
  const wrapped = function (...args) {
    const out = original.apply(this, args);
    if (method === 'record') {
      if (args[0]?.status === 'launched') after();
      return out;
    }
    return Promise.resolve(out).then((v) => (after(), v));
  };
  if (method === 'record') storage.record = wrapped;
  else own[method] = wrapped;
  const restore = () => {
    if (method === 'record') delete storage.record;
    else own[method] = original;
  };
  try {
    const result = admit();
    if (result && typeof result.then === 'function') return result.finally(restore);
    restore();
    return result;
  } catch (err) {
    restore();
    throw err;
  }
}

for (const [Storage, lastWrite] of [
  [SqliteTriggerStorage, 'record'],
  [PgTriggerStorage, 'enqueueIn'],
]) {
  const admit = Storage.prototype.admit;
  if (fault === 'kill-before-commit') {
    Storage.prototype.admit = function (...args) {
      return withLastWrite(this, lastWrite, kill, () => admit.apply(this, args));
    };
  } else if (fault === 'kill-after-commit') {
    Storage.prototype.admit = function (...args) {
      const out = admit.apply(this, args);
      const afterCommit = (admitted) => (kill(), admitted);
      return out && typeof out.then === 'function' ? out.then(afterCommit) : afterCommit(out);
    };
  } else {
    throw new Error(`ingress-faults: AGENT_WORKFLOW_FAULT_INGRESS is ${JSON.stringify(fault)}; expected kill-before-commit or kill-after-commit`);
  }
}
