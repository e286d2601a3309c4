// Package checker decides whether a history (package jepsen/history) shows
// a violation of raftstream's promises. Every checker is a pure function of
// the history and Options: it reads no clock except porcupine's time budget,
// does no I/O, and returns a Result that is Ok, Illegal (with the anomalies
// and the operations that show them) or Unknown (the history cannot decide,
// e.g. no final read, or the linearizability search ran out of time).
//
// The checkers and what they prove:
//
//   - lost: every acknowledged XADD appears in the last full read of its
//     stream that began after the XADD returned.
//   - duplicates: no value and no entry ID appears twice in one read.
//   - ids: entry IDs strictly increase within every read and across XADD
//     replies ordered in real time; a value and its ID are the same pair
//     wherever they are seen; no read shows a value nobody wrote.
//   - prefix: full reads of a stream are prefixes of one another, later
//     reads extend earlier ones, partial XREADs are contiguous runs that
//     start right after their start ID (with Options.Trims, a read may
//     additionally lack a prefix trimmed away).
//   - linearizable: each stream, modeled as an append-only list of (ID,
//     value) with append(value) → ID and read-all → list, is linearizable
//     (porcupine); the failing key's visualization is in Result.Files.
//   - groups: per consumer group: `>` never delivers an entry twice (in
//     particular not an acknowledged one); acknowledged entries are not
//     pending; delivered, unacknowledged entries stay pending (XPENDING
//     probes); the group's last-delivered position never moves backwards; after
//     the final heal every acknowledged write was delivered to the group
//     (every group in Options.Groups, even one the history never shows).
//   - liveness: after the final heal at least one operation of each kind
//     succeeded.
//
// Assumptions about the workload: values written are unique per stream
// (xadd-idmp may retry a value under the same IID; with Options.Resends a
// client may append a value again under a new ID); a stream has one field
// whose value is the Value; consumer groups are created at ID 0 before the
// first write, so every entry is eventually deliverable to every group.
package checker
