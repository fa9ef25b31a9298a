// A result larger than the inline limit (16 KiB): hosts that capture artifacts store it once by
// digest, and every replay must read it back from the export.
export default {
  tools: {
    report: ({ lines }) => ({ lines: Array.from({ length: lines }, (_, i) => `line ${i + 1} of the quarterly report`) }),
  },
};
