/**
 * Writes a compacted journal: for every run, in creation order, one `run-snapshot` record (plan,
 * latest checkpoint, status, timestamps) followed by `events` records holding every event of the
 * run. Nothing is dropped: compaction removes only the framing of many small commits.
 *
 * For a run that can still change, events are packed separately before and after the checkpoint
 * so that `load` keeps reading only the events after it. A terminal run's events are packed
 * across the checkpoint, into as few records as `compactEventsChunkBytes` allows.
 *
 * The file is written to a temporary path and fsynced; the caller re-reads it, checks it and
 * renames it into place.
 */
import * as fs from 'node:fs';
import { crc32c } from './crc32c.js';
import { encodeSnapshot, recordType, type FileSlice } from './journal-codec.js';
import type { EventSegment, RunIndex } from './journal-index.js';
import { compactEventsChunkBytes } from './limits.js';
import { encodeFileHeader, encodeRecord, encodeRecordHeader, type RecordFileKind } from './record-file.js';

export interface CompactionReport {
  runs: number;
  events: number;
  bytesBefore: number;
  bytesAfter: number;
}

export interface CompactionInput {
  temp: string;
  kind: RecordFileKind;
  /** Runs in creation order. */
  runs: readonly RunIndex[];
  isTerminal: (run: RunIndex) => boolean;
  read: (slice: FileSlice) => Buffer;
  /** Reads a slice into `into` (at least `slice.length` bytes) and answers that part of it. */
  readInto: (slice: FileSlice, into: Buffer) => Buffer;
  bytesBefore: number;
}

export function writeCompactedJournal(input: CompactionInput): CompactionReport {
  const fd = fs.openSync(input.temp, 'w');
  let position = 0;
  const write = (bytes: Uint8Array): void => {
    let done = 0;
    while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done, position + done);
    position += bytes.length;
  };
  let events = 0;
  let scratch = Buffer.alloc(64 * 1024);
  try {
    write(encodeFileHeader(input.kind));
    for (const run of input.runs) {
      const snapshot = {
        runId: run.runId,
        createdAt: run.createdAt,
        updatedAt: run.updatedAt,
        lastSeq: run.lastSeq,
        checkpointSeq: run.checkpointSeq,
        status: run.status,
        plan: input.read(run.plan),
        ...(run.checkpoint ? { checkpoint: input.read(run.checkpoint) } : {}),
        ...(run.projection ? { projection: run.projection instanceof Uint8Array ? run.projection : input.read(run.projection) } : {}),
      };
      write(encodeRecord(recordType.runSnapshot, encodeSnapshot(snapshot)));
      const cut = input.isTerminal(run) ? undefined : run.checkpointSeq;
      for (const chunk of packSegments(run.segments, cut)) {
        // Streamed: the header and the payload's fixed fields, then each segment read into one
        // reused buffer and written, the checksum carried along; a chunk is never held whole.
        const first = chunk[0]!.firstSeq;
        const last = chunk[chunk.length - 1]!.lastSeq;
        const eventsLength = chunk.reduce((n, segment) => n + segment.length, 0);
        const runId = Buffer.from(run.runId, 'utf8');
        const fields = Buffer.alloc(2 + runId.length + 12);
        fields.writeUInt16LE(runId.length, 0);
        runId.copy(fields, 2);
        fields.writeUInt32LE(first, 2 + runId.length);
        fields.writeUInt32LE(last, 6 + runId.length);
        fields.writeUInt32LE(eventsLength, 10 + runId.length);
        const header = encodeRecordHeader(recordType.events, fields.length + eventsLength);
        let crc = crc32c(fields, crc32c(header));
        write(header);
        write(fields);
        for (const segment of chunk) {
          if (scratch.length < segment.length) scratch = Buffer.alloc(segment.length);
          const bytes = input.readInto(segment, scratch);
          crc = crc32c(bytes, crc);
          write(bytes);
        }
        const trailer = Buffer.alloc(4);
        trailer.writeUInt32LE(crc, 0);
        write(trailer);
        events += last - first + 1;
      }
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return { runs: input.runs.length, events, bytesBefore: input.bytesBefore, bytesAfter: position };
}

/**
 * Groups consecutive segments into chunks of at most `compactEventsChunkBytes` (a segment larger
 * than that stays alone), never letting a chunk cross `cutAfterSeq` when it is given.
 */
export function packSegments(segments: readonly EventSegment[], cutAfterSeq?: number): EventSegment[][] {
  const chunks: EventSegment[][] = [];
  let current: EventSegment[] = [];
  let bytes = 0;
  for (const segment of segments) {
    const crossesCut = cutAfterSeq !== undefined && current.length > 0 && segment.firstSeq === cutAfterSeq + 1;
    if (current.length > 0 && (bytes + segment.length > compactEventsChunkBytes || crossesCut)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(segment);
    bytes += segment.length;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
