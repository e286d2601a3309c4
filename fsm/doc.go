// Package fsm is one shard's replicated state machine: a hashicorp/raft
// group member whose FSM is an engine.Engine, plus the proposal batcher that
// packs client commands into log entries and the read fence that makes reads
// linearizable.
//
// # Using a shard
//
//	cfg := fsm.DefaultConfig()
//	cfg.ShardID, cfg.Dir, cfg.LocalID, cfg.Transport = 3, dir, "node-a", tr
//	s, err := fsm.Open(cfg)                  // starts Raft and the batcher
//	err = s.BootstrapIfEmpty(servers)        // founding members only; no-op on restart
//	f := s.Submit(fsm.Unit{argv})            // never blocks for long
//	replies, err := f.Wait(ctx)              // one reply per command
//	err = s.Read(ctx, func(e *engine.Engine) { ... })  // linearizable, leader only
//	s.StaleRead(func(e *engine.Engine) { ... })        // any replica (READONLY)
//	b, err := s.Backup(ctx)                  // leader only: the engine's view at b.Index, after a read fence
//	err = s.Close()
//
// # Outcomes
//
// A Future ends in exactly one of: replies (the unit was committed and
// applied; user errors such as WRONGTYPE are replies, not errors),
// *NotLeaderError, ErrBusy or ErrShutdown (nothing was proposed: retrying is
// safe), or ErrUnknownOutcome (the entry may or may not be committed: leader
// lost with it in flight, shutdown, ApplyTimeout or the caller's ctx). A
// success is reported only after the entry is committed on a majority and
// applied here.
//
// # Determinism
//
// Every replica applies the same entries to the same engine and gets the same
// state: time comes from the entry (now = max(entry timestamp, last applied
// timestamp), persisted in snapshots), the entry encoding is canonical, and
// an entry that fails to decode stops the replica (panic) rather than being
// skipped. Every command in the log is the engine's, including CONFIG SET
// of the engine's parameters (its configuration is replicated state) and
// DEBUG RELOAD (a snapshot round trip of the engine on every replica).
//
// The log entry and snapshot formats are documented in codec.go and
// snapshot.go; DESIGN.md explains the batching, read and failure choices.
package fsm
