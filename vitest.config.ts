import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'bench/**', 'dist/**'],
    // Each file in its own process: the engine needs a V8 flag set before the first wasm compile,
    // and crash tests spawn and kill children.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
