// The router's collector of dead buffers (hosts/router/external-memory.ts), with a stand-in for
// V8's external memory and for `gc`.
import { describe, expect, it } from 'vitest';

const { ExternalMemoryCollector } = await import('../../dist/hosts/router/external-memory.js');

const MiB = 2 ** 20;

describe('ExternalMemoryCollector', () => {
  it('collects once external memory is the step above its base, then measures from what is left', () => {
    let external = 10 * MiB;
    let collections = 0;
    const gc = () => {
      collections++;
      external = 12 * MiB; // garbage freed; a wasm memory that grew stays
    };
    const c = new ExternalMemoryCollector(8 * MiB, gc, () => external);
    external = 17 * MiB;
    expect(c.check()).toBe(false);
    external = 18 * MiB;
    expect(c.check()).toBe(true);
    expect(collections).toBe(1);
    expect(c.stats()).toEqual({ collections: 1, baseBytes: 12 * MiB });
    external = 19.9 * MiB;
    expect(c.check()).toBe(false);
    external = 20 * MiB;
    expect(c.check()).toBe(true);
    expect(collections).toBe(2);
  });

  it('follows V8 when it collected by itself meanwhile', () => {
    let external = 30 * MiB;
    let collections = 0;
    const c = new ExternalMemoryCollector(8 * MiB, () => collections++, () => external);
    external = 5 * MiB; // V8's own collection
    expect(c.check()).toBe(false);
    external = 12 * MiB;
    expect(c.check()).toBe(false);
    external = 13 * MiB;
    expect(c.check()).toBe(true);
    expect(collections).toBe(1);
  });

  it('does nothing without gc (a process started without --expose-gc) or with a step of 0', () => {
    let external = 0;
    const off = new ExternalMemoryCollector(8 * MiB, undefined, () => external);
    const zero = new ExternalMemoryCollector(0, () => {
      throw new Error('collected');
    }, () => external);
    external = 100 * MiB;
    expect(off.enabled).toBe(false);
    expect(off.check()).toBe(false);
    expect(zero.check()).toBe(false);
    expect(off.stats().collections).toBe(0);
  });
});
