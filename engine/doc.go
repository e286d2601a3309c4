// Package engine is one shard's keyspace: Redis streams (entries, consumer
// groups, PELs) and plain strings, with the commands that read and change
// them. It is a pure data structure: no I/O, clock, randomness, logging or
// goroutines (TestEngineImports guards this). Time enters as the now
// argument of Exec, taken from the Raft log entry.
//
// Using it:
//
//	e := engine.New(engine.DefaultConfig())
//	reply := e.Exec(now, argv)            // argv[0] is the command name
//	keys := e.TakeSignaled()              // wake readers blocked on these keys
//	if err := engine.Validate(now, argv); err != nil { ... } // leader-side check
//	snap := e.Snapshot()                  // cheap point-in-time view
//	snap.WriteTo(w); e2, err := engine.Restore(r)
//
// Replies are protocol-neutral values (reply.go) that package resp encodes
// as RESP2 or RESP3; error replies carry Redis's exact wording.
//
// Storage of a stream (stream.go, stream_node.go, listpack.go, rax.go):
// entries are packed into listpack nodes byte-identical to Redis's (master
// entry, ID deltas, same-fields flag, tombstones), split by the same
// stream-node-max-bytes / stream-node-max-entries rules, and indexed by
// their master ID. Trimming (trim.go) frees whole nodes exactly where Redis
// does, so XTRIM ~, XINFO radix-tree-keys/-nodes and MEMORY USAGE agree with
// redis-server; the differential tests (difftest_test.go) compare replies
// byte for byte against a real redis-server.
//
// Redis 8.x features, each in its own file and tested in redis8_*_test.go
// against the documentation (the installed redis-server is 7.0):
// KEEPREF/DELREF/ACKED policies on XADD/XTRIM and XDELEX/XACKDEL
// (trim_policy.go, xdelex.go, 8.2); XREADGROUP ... CLAIM
// (xreadgroup_claim.go, 8.4); idempotent producers IDMP/IDMPAUTO and
// XCFGSET (idmp.go, 8.6); XNACK (xnack.go, 8.8). Dead-letter streams
// (XGROUP SETDLQ, deadletter.go) are a raftstream extension, not Redis.
// Without the new options, replies are those of Redis 7.
//
// Key expiry (expire.go, expire_index.go): expiries are absolute Unix ms in
// each key's Value, indexed by time; a key whose expiry is at or before a
// command's now is absent to it. Expired keys leave the keyspace only
// through log commands (a write over them, or RAFTSTREAM.EXPIRED, which the
// shard leader's expiry cycle proposes from ExpireCycle). Reads run at
// ReadTime: the replica's clock, never earlier than the applied log.
//
// Retention policies (retention.go, a raftstream extension): a replicated
// table of MAXLEN/MAXAGE/MAXBYTES limits per stream name or pattern,
// enforced by RAFTSTREAM.RETAIN, which the shard leader proposes from
// RetentionCycle and which trims through XTRIM's machinery at the entry's
// time. XINFO STREAM ends with a retention-policy field for a stream one
// governs.
package engine
