import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../hosts/core/store.js';
import { ReceiptLog, receiptFileName } from '../../hosts/router/receipt-log.js';
import { stepClock, tempDir } from './helpers.js';

describe('ReceiptLog', () => {
  it('cuts a torn last receipt at any byte and keeps the earlier ones', () => {
    const dir = tempDir();
    const log = ReceiptLog.open(dir, stepClock());
    log.claim('a', 'tool', false);
    log.started('a', 123, { pid: 123, startTicks: '99', bootId: 'b' });
    const lastStart = fs.statSync(path.join(dir, receiptFileName)).size;
    // A torn last write never returned, so it never moved the high-water mark.
    const markBefore = fs.readFileSync(path.join(dir, `${receiptFileName}.mark`));
    log.completed({ invocationId: 'a', exitCode: 0, signal: null, output: { ok: 1 }, stderrTail: '' });
    log.close();
    const file = path.join(dir, receiptFileName);
    const bytes = fs.readFileSync(file);
    for (let cut = lastStart; cut < bytes.length; cut++) {
      fs.writeFileSync(file, bytes.subarray(0, cut));
      fs.writeFileSync(`${file}.mark`, markBefore);
      const reopened = ReceiptLog.open(dir);
      expect(reopened.droppedTailBytes).toBe(cut - lastStart);
      expect(reopened.get('a')!.start!.pid).toBe(123);
      expect(reopened.get('a')!.completion).toBeUndefined();
      reopened.close();
    }
  });

  it('refuses a log cut short of its acknowledged receipts or missing, unless the loss is accepted', () => {
    const dir = tempDir();
    const log = ReceiptLog.open(dir, stepClock());
    log.claim('a', 'tool', false);
    const claimEnd = fs.statSync(path.join(dir, receiptFileName)).size;
    log.started('a', 123, undefined);
    log.close();
    const file = path.join(dir, receiptFileName);
    const size = fs.statSync(file).size;
    fs.truncateSync(file, claimEnd);
    const error = (() => {
      try {
        ReceiptLog.open(dir);
      } catch (e) {
        return e as StoreError;
      }
      throw new Error('opened');
    })();
    expect(error.code).toBe('store.truncated');
    expect(error.message).toContain(`but ${size} bytes were committed`);
    fs.rmSync(file);
    expect(() => ReceiptLog.open(dir)).toThrow(/receipts\.log is missing/);
    const accepted = ReceiptLog.open(dir, stepClock(), { acceptLoss: true });
    expect(accepted.loss).toMatchObject({ code: 'store.truncated', committedBytes: size });
    expect(accepted.all()).toEqual([]);
    accepted.close();
  });

  it('retires settled attempts only, durably', () => {
    const dir = tempDir();
    const log = ReceiptLog.open(dir, stepClock());
    log.claim('done', 't', false);
    log.started('done', 1, undefined);
    log.completed({ invocationId: 'done', exitCode: 0, signal: null, stderrTail: '' });
    log.claim('busy', 't', false);
    log.started('busy', 2, undefined);
    expect(log.retire(['done', 'busy', 'unknown'])).toBe(1);
    log.claim('next', 't', true);
    log.close();
    const reopened = ReceiptLog.open(dir);
    expect(reopened.all().map((a) => a.claim.invocationId)).toEqual(['busy', 'next']);
    // A retired id stays refused in this log's lifetime only through the journal; the log forgets it.
    expect(() => reopened.claim('busy', 't', false)).toThrow(StoreError);
    reopened.close();
  });
});
