// The pretest setup: without the system packages and without root it stops with the command to run.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const script = new URL('./system-deps.mjs', import.meta.url).pathname;

describe('test setup', () => {
  it('names the exact apt-get command when spin and gcc are missing and it may not install', () => {
    // An empty PATH hides spin and gcc (and apt-get); as root the child runs as nobody.
    const asRoot = process.getuid?.() === 0;
    const r = spawnSync(process.execPath, [script], { env: { PATH: '/nonexistent' }, encoding: 'utf8', cwd: '/', ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('spin is missing');
    expect(r.stderr).toMatch(/apt-get update -qq && apt-get install -y -qq (chromium )?spin gcc/);
  });
});
