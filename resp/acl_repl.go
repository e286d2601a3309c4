package resp

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/acl"
)

// ACL replication.
//
// ACL SETUSER and DELUSER must reach every node and survive restarts. The
// simplest sound carrier is a shard's Raft log: each change is appended, as
// an entry of the reserved stream ACLStreamKey, to shard 0 (the key's hash
// tag puts it in slot 0, which shard 0 always owns). Raft orders the
// changes, persists them (log and snapshots) and copies them to shard 0's
// replicas; each node replays the stream, in ID order, into its in-memory
// users: at once after its own change commits, and by polling its local
// replica for the others' (ACLSyncInterval). A restarted node replays the
// stream from the start.
//
// Passwords are never written in clear: ">pass" and "<pass" are turned into
// "#sha256" and "!sha256" before proposing.
//
// Limits: a node that holds no replica of shard 0 reads the stream from
// shard 0's leader; FLUSHALL or DEL of the stream by a user allowed to
// write that key erases the history (restrict it with ~ patterns).

// ACLStreamKey is the stream that carries replicated ACL changes ("06S"
// hashes to slot 0).
const ACLStreamKey = "__raftstream:acl:{06S}"

// ACLSyncInterval is how often a node replays ACL changes made elsewhere.
const ACLSyncInterval = 200 * time.Millisecond

// aclSync is the replay position of the replicated users.
type aclSync struct {
	mu   sync.Mutex // serialises replays
	on   bool
	last string // ID of the last applied entry
}

// ReplicateACL makes ACL SETUSER and DELUSER go through shard 0's Raft log
// and starts replaying that log into this server's users until Shutdown.
// Call it once, before Serve.
func (s *Server) ReplicateACL() {
	s.aclSync.mu.Lock()
	s.aclSync.on = true
	s.aclSync.last = "0-0"
	s.aclSync.mu.Unlock()
	go func() {
		t := time.NewTicker(ACLSyncInterval)
		defer t.Stop()
		for {
			s.syncACL(true)
			select {
			case <-s.drained:
				return
			case <-t.C:
			}
		}
	}()
}

func (s *Server) aclReplicated() bool {
	s.aclSync.mu.Lock()
	defer s.aclSync.mu.Unlock()
	return s.aclSync.on
}

// proposeACL appends one change (op "SETUSER" or "DELUSER" and its
// arguments) to the ACL stream, then replays the stream up to it.
func (s *Server) proposeACL(op string, args []string) *errReply {
	argv := [][]byte{[]byte("XADD"), []byte(ACLStreamKey), []byte("*"), []byte("op"), []byte(op)}
	for _, a := range args {
		argv = append(argv, []byte("a"), []byte(a))
	}
	slot := slotOf([]byte(ACLStreamKey))
	r := s.waitOne(s.be.Submit(s.be.ShardOfSlot(slot), [][][]byte{argv}), slot)
	if er, ok := r.(*errReply); ok {
		return er
	}
	s.syncACL(false)
	return nil
}

// syncACL applies the ACL stream's entries after the last applied one.
// stale reads the local replica (polling); otherwise the leader is asked.
func (s *Server) syncACL(stale bool) {
	s.aclSync.mu.Lock()
	defer s.aclSync.mu.Unlock()
	key := []byte(ACLStreamKey)
	shard := s.be.ShardOfSlot(slotOf(key))
	for range 100 { // bounded: 100 pages of 1000 entries per sync
		var r reply
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		argv := [][]byte{[]byte("XRANGE"), key, []byte("(" + s.aclSync.last), []byte("+"), []byte("COUNT"), []byte("1000")}
		err := s.be.Read(ctx, shard, stale, func(e *engine.Engine) { r = e.Exec(time.Now().UnixMilli(), argv) })
		cancel()
		if err != nil && stale {
			// No local replica: ask the leader.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = s.be.Read(ctx, shard, false, func(e *engine.Engine) { r = e.Exec(time.Now().UnixMilli(), argv) })
			cancel()
		}
		if err != nil {
			return
		}
		entries, ok := r.(engine.Array)
		if !ok || len(entries) == 0 {
			return
		}
		for _, ent := range entries {
			id, op, args, ok := decodeACLEntry(ent)
			if !ok {
				s.log.Warn("acl: undecodable entry in the ACL stream", "key", ACLStreamKey)
				continue
			}
			s.applyACL(op, args)
			s.aclSync.last = id
		}
	}
}

// decodeACLEntry reads one XRANGE entry: [id, [op, OP, a, arg, a, arg...]].
func decodeACLEntry(r reply) (id, op string, args []string, ok bool) {
	pair, ok := r.(engine.Array)
	if !ok || len(pair) != 2 {
		return "", "", nil, false
	}
	idb, ok1 := pair[0].(engine.BulkString)
	fields, ok2 := pair[1].(engine.Array)
	if !ok1 || !ok2 || len(fields) < 2 || len(fields)%2 != 0 {
		return "", "", nil, false
	}
	for i := 0; i < len(fields); i += 2 {
		f, ok1 := fields[i].(engine.BulkString)
		v, ok2 := fields[i+1].(engine.BulkString)
		if !ok1 || !ok2 {
			return "", "", nil, false
		}
		if i == 0 {
			if !bytes.Equal(f, []byte("op")) {
				return "", "", nil, false
			}
			op = string(v)
			continue
		}
		args = append(args, string(v))
	}
	return string(idb), op, args, true
}

// applyACL applies a replicated change.
func (s *Server) applyACL(op string, args []string) {
	switch op {
	case "SETUSER":
		if len(args) >= 1 {
			if er := s.acl.SetUser(args[0], args[1:]); er != nil {
				s.log.Warn("acl: replicated SETUSER refused", "user", args[0], "err", er.Msg)
			}
		}
	case "DELUSER":
		_, _ = s.acl.DelUsers(args)
	}
}

// replicatedSetUser validates ops against the user as it is, then
// proposes them (passwords hashed).
func (s *Server) replicatedSetUser(name string, ops []string) *errReply {
	if er := s.acl.CheckSetUser(name, ops); er != nil {
		return er
	}
	return s.proposeACL("SETUSER", append([]string{name}, acl.HashedOps(ops)...))
}

func (s *Server) replicatedDelUsers(names []string) (int, *errReply) {
	if er := acl.CheckDelUsers(names); er != nil {
		return 0, er
	}
	n := 0
	for _, name := range names {
		if s.acl.Get(name) != nil {
			n++
		}
	}
	if er := s.proposeACL("DELUSER", names); er != nil {
		return 0, er
	}
	return n, nil
}
