// Package importer is `raftstream import`: it copies streams from a running
// redis-server or Redis Cluster into a raftstream node or cluster, so that
// a team moves with its data, its consumer groups and its unacknowledged
// work. `raftstream restore` writes a raftstream backup back with the same
// writer (Sources, below).
//
//	raftstream import --from host:port [--cluster] [--match pattern] [--to host:port]
//	                  [--password …] [--to-password …] [--verify]
//
// # What is copied, and how
//
// The streams are the keys of type stream matching --match (SCAN … MATCH
// pattern TYPE stream; with --cluster on every master, found with CLUSTER
// SLOTS). The target is reached with a cluster client when it says
// cluster_enabled:1 (INFO cluster), with a plain client otherwise. Four
// streams are imported at a time (--parallel); for each:
//
//   - entries, with their IDs and fields in order: XRANGE in chunks of
//     --chunk entries, XADD key <id> field value … with the same ID, one
//     pipeline per chunk;
//   - consumer groups: XGROUP CREATE key group last-delivered-id MKSTREAM
//     ENTRIESREAD entries-read (XGROUP SETID … ENTRIESREAD for a group the
//     target already has);
//   - consumers: XGROUP CREATECONSUMER for those with no pending entry;
//   - pending entries with their owner, delivery time and delivery count:
//     XCLAIM key group owner 0 id TIME delivery-time RETRYCOUNT
//     delivery-count FORCE JUSTID, which creates the PEL entry without
//     delivering anything (the form Redis propagates to replicas);
//   - a pending entry no consumer owns (released by XNACK, Redis 8.8):
//     XNACK key group FAIL IDS 1 id RETRYCOUNT delivery-count FORCE, which
//     makes it owner-less with the same delivery count;
//   - IDMP settings, when the source reports them (Redis 8.6): XCFGSET key
//     IDMP-DURATION d IDMP-MAXSIZE n;
//   - last-generated-id, entries-added and max-deleted-entry-id, last:
//     XSETID key id ENTRIESADDED n MAXDELETEDID id. Lag follows from these
//     and entries-read, so it is the source's too.
//
// # Sources
//
// The import reads through a Source (source.go): the Redis server or
// cluster of --from, or, for `raftstream restore`, one shard of a
// raftstream backup decoded into an engine (EngineSource, RunFrom), whose
// command replies go through the same RESP2 encoding and decoding as a
// server's, so the import decides alike. A backup adds what only a
// raftstream engine has: dead-letter settings (XGROUP SETDLQ, set on
// every run since no command reads them back) and string keys (GET, then
// SET where the target differs).
//
// A pending entry whose stream entry is gone (deleted or trimmed after it
// was delivered, and never acknowledged) cannot be made pending by XCLAIM,
// which drops references to missing entries. The import writes a
// placeholder entry at that ID, claims it, and removes it again (XDEL, or
// XTRIM MINID before the source's first entry), which leaves the same
// dangling reference the source has.
//
// # Running it again; interrupted runs
//
// Every stream starts by reading both sides (XINFO STREAM FULL with a COUNT
// that covers the largest PEL), and only the difference is written:
// entries after the target's last-generated-id (the metadata is set last,
// so after an interrupted run that is the last entry copied), groups,
// consumers and pending entries that differ, XSETID when the metadata
// differs. A second run over a complete target writes nothing; a run
// interrupted anywhere (killed, Ctrl-C, a lost connection) continues where
// it stopped when run again. A stream whose write fails is tried again
// from what the target then holds (--retries); when a failed XADD left a
// gap below a later entry, the target's copy of that stream is deleted and
// imported anew.
//
// For an exact copy, stop the producers and consumers on the source first.
// A later run copies the entries appended since and brings groups and PELs
// up to date, but entries deleted on the source after they were imported
// are reported, not deleted on the target (DEL the key on the target and
// run again).
//
// # Fields that differ, and why
//
// --verify compares XINFO STREAM FULL on both sides for every stream, field
// by field (and every entry, with XRANGE), and exits 1 on a difference.
// These fields are not compared, because no command can make them equal:
//
//   - radix-tree-keys, radix-tree-nodes: how the entries are packed into
//     nodes, which follows each server's history (the source's nodes keep
//     the tombstones of deleted entries) and node size settings;
//   - consumers' seen-time (and active-time, Redis 7.2+): the time of a
//     consumer's last interaction, which the import's XCLAIM and XGROUP
//     CREATECONSUMER set to the moment of the import. XCLAIM TIME sets the
//     pending entry's delivery time exactly, but no command sets a
//     consumer's seen-time or active-time to a given value;
//   - the IDMP memory of producers of Redis 8.6 (pids-tracked, iids-*),
//     which no command writes.
//
// Fields only one side reports (raftstream reports active-time,
// nacked-count and the IDMP fields, which Redis 7.0 lacks) are listed, not
// counted as differences. One more can differ and is reported when it
// does: a delivery time later than the target's clock (a source clock
// ahead of the target's) becomes the target's now, as XCLAIM TIME does in
// Redis. Owner-less pending entries are released in ID order: the order
// the source released them in, in which XREADGROUP … CLAIM offers them, is
// shown by no command.
//
// # Cost
//
// 100k entries of about 100 bytes from redis-server 7.0 into a single node
// on one 2-vCPU machine that also runs both servers: about 85k entries/s
// (median of 12 runs, 51–130k, in 16 streams or one, the machine shared
// with other work at a load of 9–14; BenchmarkImport in cmd/raftstream,
// the whole command from start to end). The import process and the node
// each use about 0.4 s of CPU for the 100k entries; the rest of the time
// is round trips and the node's fsyncs.
// Each stream's XINFO STREAM FULL reply is held in memory, with as many
// entries as its largest PEL; each chunk of entries too (lower --chunk for
// large entries).
//
// # Exit status
//
// 0 when every stream was imported (and, with --verify, found equal); 1
// when a stream failed, --verify found a difference, or the import could
// not run; 2 for bad flags.
package importer
