// Package resp is raftstream's client-facing server: RESP2/RESP3 over TCP,
// one connection goroutine each (conn.go), or, with Config.EventLoop, one
// event loop for the plain connections that send only writes, which hands a
// connection to a goroutine of its own once it needs anything else and
// takes it back after eight write-only pipelines (loop_linux.go; a round's
// reads and writes go through io_uring, uring_linux.go). Its sub-packages
// hold what does
// not need the server: resp/wire the protocol (the one request reader, the
// encoders, a small client), resp/command the command table, resp/acl the
// access rules, resp/admin the HTTP admin endpoints.
//
// # How a command runs
//
// Every command is resolved once (classify, dispatch.go) against the one
// declarative table (resp/command): arity, flags, key positions (including
// the STREAMS keyword form of XREAD and XREADGROUP), ACL categories and
// where it runs. Every path then passes the same admission checks (admit:
// authentication, ACL, maxmemory, CROSSSLOT):
//
//   - KindWrite: keys → slot (slots.Of) → shard (Backend.ShardOfSlot); in a
//     cluster (more than one shard) keys in different slots get CROSSSLOT,
//     as in Redis Cluster, while a node of one shard takes any keys
//     together, as a standalone Redis; the command is proposed to the
//     shard's Raft group with Backend.Submit and answered when applied. The
//     reply is the engine's, produced on every replica at the same log
//     position.
//   - KindRead: run against the shard's engine under Backend.Read
//     (linearizable on the leader; stale on READONLY connections), at the
//     serving replica's time taken after the read fence and never earlier
//     than its applied log (engine.ReadTime: key expiry).
//   - KindLocal: answered here by the handler attached to the row
//     (handlers.go; the server refuses to start if a row lacks one):
//     connection state, INFO, CONFIG, CLIENT, CLUSTER, COMMAND, keyspace
//     fan-out over local shards, RAFTSTREAM RETENTION (retention.go: to
//     every shard's log, through other nodes for the shards they lead).
//
// The server never implements stream semantics: the engine does.
//
// # Configuration and diagnostics
//
// CONFIG has one table of parameters (config.go): per node ones apply at
// once, the connection limits (limits.go) to the connections already open;
// the engine's are proposed through the log of every shard this node leads.
// Every command answered is recorded in one place (observe.go): calls,
// durations and errors for /metrics and INFO commandstats, errorstats and
// latencystats (metrics_cmds.go), the slow log (slowlog.go) and the latency
// monitor (latency.go).
//
// # What watches every command
//
// MONITOR (monitor.go) and CLIENT PAUSE (client_cmds.go) see each admitted
// command at the end of admission (dispatch.go hooked), behind one word of
// hook bits: while nobody monitors and no pause is set, the command path
// pays one atomic load for them. Monitor lines are written by a goroutine
// per monitor, never by the connection that ran the command.
//
// # Introspection
//
// HELP of the containers the server answers is Redis 7.0's text filtered to
// the subcommands the table has (help.go); COMMAND DOCS comes from the
// docs data of resp/command; CLIENT follows Redis 7 (client_cmds.go).
//
// # Pipelining
//
// A connection's pipelined commands are taken together (pipeline.go):
// every complete command the reader has is one pipeline. Consecutive
// admitted writes are submitted without waiting, so
// they share Raft entries with other clients' writes; consecutive plain reads
// on a shard run under one Read (one read fence). A read waits for the writes
// before it and a write for the reads before it, so the connection sees its
// commands in order; replies are written in order. Pipelined writes in flight
// per shard are bounded (Config.MaxInFlight): past it, connections wait
// rather than overflow the shard's queue. The reader (resp/wire) enforces
// proto-max-bulk-len and the query buffer limit before it buffers more than
// one command.
//
// # Transactions
//
// MULTI queues commands (arity and unknown-command errors, and keys on
// another shard, abort the transaction at EXEC with EXECABORT, as in Redis
// Cluster). EXEC proposes every queued engine command as ONE unit: one log
// entry, applied atomically. Per-command errors are returned inside EXEC's
// reply.
//
// # Blocking reads
//
// XREAD/XREADGROUP with BLOCK register a waiter per key before their first
// attempt; Backend's notify callback (on the apply goroutine, never
// blocking) signals them; the connection re-runs its read (XREADGROUP is
// proposed, since it changes the group). "$" is resolved to the stream's last
// ID when the client blocks. Timeouts reply a null array; a disconnected
// client is noticed by peeking at its socket.
//
// # WAIT
//
// A connection remembers the shard and log index of its last acknowledged
// write (fsm.Future.Index). WAIT and WAITAOF ask the backend how many other
// replicas of that shard have stored the index (cluster tracks what each
// follower acknowledged), waiting until enough have or the timeout passes
// (wait.go has the decisions where Redis has no equivalent).
//
// # Errors
//
// Redis wording is produced in errors.go; backend errors are mapped in one
// function (mapError): not leader → MOVED (leader known) or TRYAGAIN,
// unknown outcome → UNKNOWN (the write may have been applied; a read,
// which has no effect, answers TRYAGAIN instead: mapReadError), busy →
// TRYAGAIN, lost quorum → CLUSTERDOWN.
package resp
