/**
 * Payload layouts of the journal's record types (all integers little-endian).
 *
 * `commit` (1): one `commit()` call, i.e. a group of entries that becomes durable together.
 *   f64 committedAt (ms) | u32 entryCount | entry*
 *   entry = str16 runId | u32 expectedSeq | u32 lastSeq | u8 flags (1 plan, 2 checkpoint, 4 projection)
 *         | str16 status | [bytes32 plan] | [bytes32 checkpoint] | bytes32 events | [bytes32 projection]
 *
 * `run-snapshot` (2): written by compaction, one per run, before that run's `events` records.
 *   str16 runId | f64 createdAt | f64 updatedAt | u32 lastSeq | u32 checkpointSeq
 *   | u8 flags (2 checkpoint, 4 projection) | str16 status | bytes32 plan | [bytes32 checkpoint]
 *   | [bytes32 projection]
 *
 * The projection flag exists from file format version 2 on: the run's projection after the entry
 * (JSON, the engine's, see hosts/core/projection.ts). A version-1 file has none.
 *
 * `events` (3): written by compaction, consecutive events of one run.
 *   str16 runId | u32 firstSeq | u32 lastSeq | bytes32 events
 *
 * `str16` = u16 byte length + UTF-8; `bytes32` = u32 byte length + bytes. Events are UTF-8 JSON,
 * each one terminated by `\n`.
 */
import type { CommitEntry } from '../core/store.js';
import { BinaryReader, BinaryWriter } from './binary.js';

export const recordType = { commit: 1, runSnapshot: 2, events: 3 } as const;

const flagPlan = 1;
const flagCheckpoint = 2;
const flagProjection = 4;

/** A slice of the journal file. */
export interface FileSlice {
  offset: number;
  length: number;
}

export interface DecodedEntry {
  runId: string;
  expectedSeq: number;
  lastSeq: number;
  status: string;
  plan?: FileSlice;
  checkpoint?: FileSlice;
  events: FileSlice;
  projection?: FileSlice;
}

export interface DecodedCommit {
  committedAt: number;
  entries: DecodedEntry[];
}

export interface DecodedSnapshot {
  runId: string;
  createdAt: number;
  updatedAt: number;
  lastSeq: number;
  checkpointSeq: number;
  status: string;
  plan: FileSlice;
  checkpoint?: FileSlice;
  projection?: FileSlice;
}

export interface DecodedEvents {
  runId: string;
  firstSeq: number;
  lastSeq: number;
  events: FileSlice;
}

/** An entry as written: `events` already ends with `\n` when it is not empty; the projection as JSON bytes. */
export interface NormalizedEntry extends Omit<CommitEntry, 'events' | 'outcome'> {
  events: Uint8Array;
  projection?: Uint8Array;
}

export function encodeCommit(committedAt: number, entries: readonly NormalizedEntry[]): Buffer {
  const w = new BinaryWriter().f64(committedAt).u32(entries.length);
  for (const e of entries) {
    const flags = (e.plan ? flagPlan : 0) | (e.checkpoint ? flagCheckpoint : 0) | (e.projection ? flagProjection : 0);
    w.str16(e.runId).u32(e.expectedSeq).u32(e.lastSeq).u8(flags).str16(e.status);
    if (e.plan) w.bytes32(e.plan);
    if (e.checkpoint) w.bytes32(e.checkpoint);
    w.bytes32(e.events);
    if (e.projection) w.bytes32(e.projection);
  }
  return w.finish();
}

export function decodeCommit(payload: Buffer, payloadOffset: number): DecodedCommit {
  const r = new BinaryReader(payload, `commit record at ${payloadOffset}`);
  const at = (s: { at: number; length: number }): FileSlice => ({ offset: payloadOffset + s.at, length: s.length });
  const committedAt = r.f64();
  const count = r.u32();
  const entries: DecodedEntry[] = [];
  for (let i = 0; i < count; i++) {
    const runId = r.str16();
    const expectedSeq = r.u32();
    const lastSeq = r.u32();
    const flags = r.u8();
    const status = r.str16();
    const entry: DecodedEntry = { runId, expectedSeq, lastSeq, status, events: { offset: 0, length: 0 } };
    if (flags & flagPlan) entry.plan = at(r.slice32());
    if (flags & flagCheckpoint) entry.checkpoint = at(r.slice32());
    entry.events = at(r.slice32());
    if (flags & flagProjection) entry.projection = at(r.slice32());
    entries.push(entry);
  }
  r.expectEnd();
  return { committedAt, entries };
}

export interface SnapshotSource {
  runId: string;
  createdAt: number;
  updatedAt: number;
  lastSeq: number;
  checkpointSeq: number;
  status: string;
  plan: Uint8Array;
  checkpoint?: Uint8Array;
  projection?: Uint8Array;
}

export function encodeSnapshot(s: SnapshotSource): Buffer {
  const w = new BinaryWriter()
    .str16(s.runId)
    .f64(s.createdAt)
    .f64(s.updatedAt)
    .u32(s.lastSeq)
    .u32(s.checkpointSeq)
    .u8((s.checkpoint ? flagCheckpoint : 0) | (s.projection ? flagProjection : 0))
    .str16(s.status)
    .bytes32(s.plan);
  if (s.checkpoint) w.bytes32(s.checkpoint);
  if (s.projection) w.bytes32(s.projection);
  return w.finish();
}

export function decodeSnapshot(payload: Buffer, payloadOffset: number): DecodedSnapshot {
  const r = new BinaryReader(payload, `run-snapshot record at ${payloadOffset}`);
  const at = (s: { at: number; length: number }): FileSlice => ({ offset: payloadOffset + s.at, length: s.length });
  const runId = r.str16();
  const createdAt = r.f64();
  const updatedAt = r.f64();
  const lastSeq = r.u32();
  const checkpointSeq = r.u32();
  const flags = r.u8();
  const status = r.str16();
  const plan = at(r.slice32());
  const snapshot: DecodedSnapshot = { runId, createdAt, updatedAt, lastSeq, checkpointSeq, status, plan };
  if (flags & flagCheckpoint) snapshot.checkpoint = at(r.slice32());
  if (flags & flagProjection) snapshot.projection = at(r.slice32());
  r.expectEnd();
  return snapshot;
}

export function encodeEvents(runId: string, firstSeq: number, lastSeq: number, events: Uint8Array): Buffer {
  return new BinaryWriter().str16(runId).u32(firstSeq).u32(lastSeq).bytes32(events).finish();
}

export function decodeEvents(payload: Buffer, payloadOffset: number): DecodedEvents {
  const r = new BinaryReader(payload, `events record at ${payloadOffset}`);
  const runId = r.str16();
  const firstSeq = r.u32();
  const lastSeq = r.u32();
  const s = r.slice32();
  r.expectEnd();
  return { runId, firstSeq, lastSeq, events: { offset: payloadOffset + s.at, length: s.length } };
}
