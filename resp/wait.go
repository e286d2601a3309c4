package resp

import (
	"context"
	"math"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// WAIT and WAITAOF: how many other replicas of its shard hold the
// connection's last write.
//
// A write is answered once its Raft entry is committed, i.e. stored on a
// majority, but WAIT asks about a given number of replicas. The connection
// remembers the log index of the entry that applied its last write
// (fsm.Future.Index) and its shard; WAIT asks the backend how many other
// replicas have stored (appended and fsynced) that index, waiting until
// numreplicas have or the timeout passes, and answers that count, as Redis
// answers the replicas whose acknowledged offset reached the client's.
//
// Decisions, each Redis's where it has one:
//   - A connection that wrote nothing has offset 0 in Redis, so every
//     connected replica counts: here the followers that answered the
//     leader within an election timeout, of the first shard this node
//     leads (a node leading none answers 0).
//   - Only the last write's shard is asked about: like Redis's single
//     offset, one position per connection. Writes to several shards from
//     one connection are covered for the last shard only, and commands
//     proposed to every shard (FLUSHALL, CONFIG SET, DEBUG RELOAD) do not
//     move the position.
//   - Only the shard's leader sees its followers' acknowledgements. When
//     this node no longer leads the shard of the last write (a failover or
//     a leadership move since), or the write was forwarded to another node,
//     the count cannot grow here: WAIT answers at once with the count it
//     saw (0 if none).
//   - Inside MULTI (at EXEC) WAIT never blocks and answers the count at
//     once (Redis: CLIENT_MULTI / CLIENT_DENY_BLOCKING), against the
//     position before the transaction.
//   - The local copy of WAITAOF is always fsynced: a write is answered only
//     after its entry is in the leader's log, which is fsynced before raft
//     counts it (appendonly is always yes here).

// waitState is a connection's part in WAIT (its own goroutine only).
type waitState struct {
	// shard and index locate the entry that applied the connection's last
	// acknowledged write; wrote is false until there is one.
	shard int
	index uint64
	wrote bool
	// elsewhere: the last write was forwarded to another node, whose log
	// this node cannot see.
	elsewhere bool
	// noBlock is set while EXEC runs a transaction's commands.
	noBlock bool
}

// noteWrite makes f's unit, submitted to shard and completed, the
// connection's last write. A unit no entry applied (every command failed
// validation) moves nothing, as a Redis command that propagates nothing.
func (c *client) noteWrite(shard int, f futureLike) {
	if i := f.Index(); i > 0 {
		c.wait = waitState{shard: shard, index: i, wrote: true, noBlock: c.wait.noBlock}
	}
}

// noteForwarded records that the connection's last write went to another
// node (forward.go).
func (c *client) noteForwarded() {
	c.wait.elsewhere, c.wait.wrote = true, false
}

// writeOne proposes a one-command write and waits for it, noting its entry
// as the connection's last write.
func (s *Server) writeOne(c *client, shard, slot int, argv [][]byte) reply {
	f := s.be.Submit(shard, [][][]byte{argv})
	r := s.waitOne(f, slot)
	c.noteWrite(shard, f)
	return r
}

// waitSlice bounds one wait on the backend, so that a waiting connection
// notices its client leaving, CLIENT KILL and shutdown (as blocking reads
// do, block.go).
const waitSlice = 200 * time.Millisecond

// cmdWait answers WAIT numreplicas timeout.
func cmdWait(s *Server, c *client, argv [][]byte) reply {
	want, ok := engine.ParseInt(argv[1])
	if !ok {
		return errNotInteger
	}
	ms, er := waitTimeout(argv[2])
	if er != nil {
		return er
	}
	return engine.Integer(s.awaitReplicas(c, want, ms))
}

// cmdWaitAOF answers WAITAOF numlocal numreplicas timeout (Redis 7.2):
// [local copies fsynced, replicas fsynced].
func cmdWaitAOF(s *Server, c *client, argv [][]byte) reply {
	local, ok := engine.ParseInt(argv[1])
	if !ok {
		return errNotInteger
	}
	if local < 0 || local > 1 {
		return errorf("ERR value is out of range, value must between 0 and 1")
	}
	want, ok := engine.ParseInt(argv[2])
	if !ok {
		return errNotInteger
	}
	if want < 0 {
		return errorf("ERR value is out of range, must be positive")
	}
	ms, er := waitTimeout(argv[3])
	if er != nil {
		return er
	}
	acked := int64(1)
	if c.wait.elsewhere {
		acked = 0 // written on another node: not in this node's log
	}
	return engine.Array{engine.Integer(acked), engine.Integer(s.awaitReplicas(c, want, ms))}
}

// waitTimeout parses a WAIT timeout in milliseconds (0 = forever) as Redis
// 7.2 does (getTimeoutFromObjectOrReply); Redis 7.0 lacks the out-of-range
// check and lets the deadline overflow.
func waitTimeout(b []byte) (int64, *errReply) {
	ms, ok := engine.ParseInt(b)
	switch {
	case !ok:
		return 0, errorf("ERR timeout is not an integer or out of range")
	case ms < 0:
		return 0, errorf("ERR timeout is negative")
	case ms > 0 && ms > math.MaxInt64-time.Now().UnixMilli():
		return 0, errorf("ERR timeout is out of range")
	}
	return ms, nil
}

// awaitReplicas returns how many other replicas hold the connection's last
// write, once at least want do, or after ms milliseconds (0 = no limit),
// or at once when it cannot grow (see the decisions above) or the
// connection may not block.
func (s *Server) awaitReplicas(c *client, want, ms int64) int {
	shard, index, ok := s.waitTarget(c)
	if !ok {
		return 0
	}
	w := int(min(max(want, 0), math.MaxInt32))
	// First without blocking: a write already on enough followers (the
	// usual case) costs no timer and no context.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	n, leading := s.be.WaitReplicas(done, shard, index, w)
	if n >= w || !leading || c.wait.noBlock {
		return n
	}
	var deadline time.Time
	if ms > 0 {
		deadline = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	s.setBlocked(c)
	defer s.endBlocked(c)
	for {
		slice := waitSlice
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return n
			}
			slice = min(slice, left)
		}
		ctx, cancel := context.WithTimeout(context.Background(), slice)
		got, leading := s.be.WaitReplicas(ctx, shard, index, w)
		cancel()
		if !leading {
			return n // leadership moved: the count it saw holds
		}
		n = got
		if n >= w || c.isClosed() || s.waiters.isClosed() || peerClosed(c) {
			return n
		}
	}
}

// waitTarget is the shard and log index WAIT asks about: the connection's
// last write, or, for a connection that wrote nothing, index 0 of the
// first shard this node leads. ok is false when there is nothing this
// node can see.
func (s *Server) waitTarget(c *client) (shard int, index uint64, ok bool) {
	switch {
	case c.wait.elsewhere:
		return 0, 0, false
	case c.wait.wrote:
		return c.wait.shard, c.wait.index, true
	}
	for sh := 0; sh < s.be.NumShards(); sh++ {
		if s.leads(sh) {
			return sh, 0, true
		}
	}
	return 0, 0, false
}
