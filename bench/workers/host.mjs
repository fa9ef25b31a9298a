// Host module of the workers benchmark: two non-idempotent no-op tools. The store comes from
// `--store`; the lease lifetime is the default unless LEASE_TTL_MS says otherwise.
export default {
  dir: process.env.STATE_DIR,
  ...(process.env.LEASE_TTL_MS ? { leaseTtlMs: Number(process.env.LEASE_TTL_MS) } : {}),
  tools: {
    a: async () => ({ a: true }),
    b: async () => ({ b: true }),
  },
};
