package resp

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/command"
	"github.com/raftstream/raftstream/resp/wire"
)

// Blocking reads (XREAD BLOCK, XREADGROUP BLOCK).
//
// A blocked client registers a waiter on each of its keys BEFORE its first
// attempt, so that a write applied between the attempt and the wait cannot
// be missed. The Backend's notify callback (called on the apply goroutine)
// only does non-blocking channel sends; the blocked connection's own
// goroutine re-runs the read (XREAD via Read, XREADGROUP proposed through
// Raft because it changes the group), so apply never waits for a client.

// waiter is one blocked connection.
type waiter struct {
	c    *client
	wake chan struct{} // capacity 1
	// group marks XREADGROUP waiters. They are served in FIFO order, as in
	// Redis: a write wakes only the first; after its attempt (applied
	// through the log) it passes the turn to the next one, so an entry goes
	// to the client that blocked first. XREAD waiters all wake at once.
	group bool
}

// waiters indexes blocked connections by shard and key, in arrival order.
type waiters struct {
	mu     sync.Mutex
	byKey  map[waitKey][]*waiter
	count  int
	closed bool
}

type waitKey struct {
	shard int
	key   string
}

func newWaiters() *waiters { return &waiters{byKey: map[waitKey][]*waiter{}} }

func (ws *waiters) add(w *waiter, shard int, keys []string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range keys {
		wk := waitKey{shard, k}
		ws.byKey[wk] = append(ws.byKey[wk], w)
	}
	ws.count++
}

func (ws *waiters) remove(w *waiter, shard int, keys []string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range keys {
		wk := waitKey{shard, k}
		list := ws.byKey[wk]
		for i, x := range list {
			if x == w {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(ws.byKey, wk)
		} else {
			ws.byKey[wk] = list
		}
	}
	ws.count--
}

// notify is the Backend's apply callback: it signals, in FIFO order, every
// connection blocked on keys. It never blocks.
func (ws *waiters) notify(shard int, keys []string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range keys {
		firstGroup := true
		for _, w := range ws.byKey[waitKey{shard, k}] {
			if !w.group {
				signal(w.wake)
			} else if firstGroup {
				signal(w.wake)
				firstGroup = false
			}
		}
	}
}

// passOn gives the turn to the XREADGROUP waiter after w on each of keys
// (called after w's attempt, and when w leaves).
func (ws *waiters) passOn(w *waiter, shard int, keys []string) {
	if !w.group {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range keys {
		after := false
		for _, x := range ws.byKey[waitKey{shard, k}] {
			if x == w {
				after = true
			} else if after && x.group {
				signal(x.wake)
				break
			}
		}
	}
}

// wakeClient signals c's waiter (after CLIENT KILL) so it notices the close.
func (ws *waiters) wakeClient(c *client) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, list := range ws.byKey {
		for _, w := range list {
			if w.c == c {
				signal(w.wake)
			}
		}
	}
}

// closeAll wakes every waiter (shutdown).
func (ws *waiters) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	for _, list := range ws.byKey {
		for _, w := range list {
			signal(w.wake)
		}
	}
}

func (ws *waiters) isClosed() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.closed
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// blockTimeout finds the BLOCK option; ok is false when there is none (or it
// is malformed: the engine then reports the error).
func blockTimeout(argv [][]byte) (ms int64, ok bool) {
	for i := 1; i+1 < len(argv); i++ {
		if bytes.EqualFold(argv[i], []byte("STREAMS")) {
			return 0, false
		}
		if bytes.EqualFold(argv[i], []byte("BLOCK")) {
			n, good := engine.ParseInt(argv[i+1])
			if !good || n < 0 {
				return 0, false
			}
			return n, true
		}
	}
	return 0, false
}

// stripBlock returns argv without its BLOCK option (blocking commands inside
// MULTI, and each attempt of a blocked read, run as non-blocking ones).
func stripBlock(cmd *command.Command, argv [][]byte) [][]byte {
	if cmd.Flags&command.FlagBlocking == 0 {
		return argv
	}
	for i := 1; i+1 < len(argv); i++ {
		if bytes.EqualFold(argv[i], []byte("STREAMS")) {
			break
		}
		if bytes.EqualFold(argv[i], []byte("BLOCK")) {
			out := make([][]byte, 0, len(argv)-2)
			out = append(out, argv[:i]...)
			return append(out, argv[i+2:]...)
		}
	}
	return argv
}

// claimRecheck is how often a blocked XREADGROUP ... CLAIM min-idle-time
// retries while nothing wakes it: pending entries become claimable as time
// passes, with no write to signal it (Redis wakes such clients when the
// oldest pending entry reaches min-idle-time). The period is min-idle-time
// bounded to [100 ms, 1 s], so a client waits at most a second more than
// Redis would, and a blocked client proposes at most ten reads a second.
func claimRecheck(cmd *command.Command, argv [][]byte) time.Duration {
	if cmd.Name != "xreadgroup" {
		return 0
	}
	for i := 1; i+1 < len(argv); i++ {
		if bytes.EqualFold(argv[i], []byte("STREAMS")) {
			return 0
		}
		if bytes.EqualFold(argv[i], []byte("CLAIM")) {
			n, good := engine.ParseInt(argv[i+1])
			if !good || n < 0 {
				return 0 // the attempt reports the error
			}
			return min(max(time.Duration(n)*time.Millisecond, 100*time.Millisecond), time.Second)
		}
	}
	return 0
}

// blockingRead serves XREAD/XREADGROUP with BLOCK ms (0 = forever).
func (s *Server) blockingRead(c *client, cmd *command.Command, shard, slot int, argv [][]byte, ms int64, asking bool) reply {
	argv = stripBlock(cmd, argv)
	keyIdx := cmd.Keys(argv)
	if len(keyIdx) == 0 {
		return s.attempt(c, cmd, shard, slot, argv, asking)
	}
	keys := make([]string, len(keyIdx))
	for i, k := range keyIdx {
		keys[i] = string(argv[k])
	}
	w := &waiter{c: c, wake: make(chan struct{}, 1), group: cmd.Name == "xreadgroup"}
	if s.waiters.isClosed() {
		return nil // shutting down
	}
	s.waiters.add(w, shard, keys)
	defer func() {
		s.waiters.passOn(w, shard, keys)
		s.waiters.remove(w, shard, keys)
	}()

	// XREAD's "$" means "the last ID now": resolve it once, at block time.
	if cmd.Name == "xread" {
		var er reply
		argv, er = s.resolveDollar(c, shard, slot, argv, keyIdx)
		if er != nil {
			return er
		}
	}
	var deadline <-chan time.Time
	if ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	var recheck <-chan time.Time
	if d := claimRecheck(cmd, argv); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		recheck = t.C
	}
	for woken := false; ; woken = true {
		r := s.attempt(c, cmd, shard, slot, argv, asking)
		if er, isErr := r.(*engine.Error); isErr && woken {
			r = s.wokenError(c, w.group, shard, slot, keys, er)
		}
		if _, empty := r.(engine.NullArray); !empty {
			return r // the deferred passOn hands the turn on
		}
		if woken {
			s.waiters.passOn(w, shard, keys)
		}
		s.setBlocked(c)
		woke := false
		for !woke {
			select {
			case <-w.wake:
				woke = true
			case <-recheck:
				woke = true
			case <-deadline:
				if u := s.endBlocked(c); u != nil {
					return u
				}
				return engine.NullArray{}
			case <-poll.C:
				if c.isClosed() || peerClosed(c) {
					s.endBlocked(c)
					c.markClosed()
					return nil
				}
				if r := s.notLeading(c, shard, slot); r != nil {
					if u := s.endBlocked(c); u != nil {
						return u
					}
					return r
				}
				if r := s.slotMovedAway(shard, slot); r != nil && !asking {
					if u := s.endBlocked(c); u != nil {
						return u
					}
					return r
				}
			}
		}
		// CLIENT UNBLOCK ends the wait with its reply, before another
		// attempt could take entries.
		if u := s.endBlocked(c); u != nil {
			return u
		}
		if c.isClosed() || s.waiters.isClosed() {
			return nil
		}
	}
}

var (
	errBlockedKeyGone   = errorf("UNBLOCKED the stream key no longer exists")
	errBlockedGroupGone = errorf("NOGROUP the consumer group this client was blocked on no longer exists")
)

// wokenError is what a blocked read answers when its attempt after a wake
// fails with er, as Redis answers clients blocked on stream keys: XREAD
// keeps waiting on a key that no longer holds a stream (a SET over it; the
// stream written again under that name serves it); XREADGROUP ends with
// -UNBLOCKED when its key is gone or holds another type, and with -NOGROUP
// when only its group is gone (XGROUP DESTROY). Every other error is
// answered as it is; a NullArray means wait on.
func (s *Server) wokenError(c *client, group bool, shard, slot int, keys []string, er *engine.Error) reply {
	wrongType, noGroup := strings.HasPrefix(er.Msg, "WRONGTYPE "), strings.HasPrefix(er.Msg, "NOGROUP ")
	switch {
	case !group && wrongType:
		return engine.NullArray{}
	case !group || !(wrongType || noGroup):
		return er
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	streams := true
	err := s.be.Read(ctx, shard, c.readonly, func(e *engine.Engine) {
		now := e.ReadTime(nowMs())
		for _, k := range keys {
			streams = streams && e.HoldsStream(now, []byte(k))
		}
	})
	switch {
	case err != nil:
		return s.mapReadError(err, slot)
	case !streams:
		return errBlockedKeyGone
	}
	return errBlockedGroupGone
}

// notLeading is the redirect for a client blocked on shard when this node
// no longer leads it (a transfer, an election it lost, a partition it is on
// the wrong side of): MOVED to the leader, or TRYAGAIN while none is known,
// so that a cluster client re-issues its read where writes now land instead
// of waiting here for entries that will never be applied under it. nil
// while the node leads the shard, and for READONLY connections, which may
// wait on any replica.
func (s *Server) notLeading(c *client, shard, slot int) reply {
	if c.readonly {
		return nil
	}
	st, hosted := s.be.ShardStatus(shard)
	if hosted && st.Role == "leader" {
		return nil
	}
	leader := st.Leader
	if top := s.be.Topology(); !hosted && shard < len(top.Shards) {
		leader = top.Shards[shard].Leader
	}
	return s.mapError(&fsm.NotLeaderError{LeaderID: leader}, slot)
}

// A connection's place in a blocking read (client.block). CLIENT UNBLOCK
// moves a waiting connection to one of the unblocked states (a
// compare-and-swap from blockWaiting, so it cannot catch a connection that
// has stopped waiting); the connection then answers with that reply.
const (
	blockNone             int32 = iota
	blockWaiting                // waiting for a write, its timeout or CLIENT UNBLOCK
	blockUnblockedTimeout       // CLIENT UNBLOCK id [TIMEOUT]: answer as if timed out
	blockUnblockedError         // CLIENT UNBLOCK id ERROR: answer -UNBLOCKED
)

// setBlocked marks c as waiting (INFO blocked_clients, CLIENT LIST flag b,
// CLIENT UNBLOCK).
func (s *Server) setBlocked(c *client) {
	if c.block.Swap(blockWaiting) == blockNone {
		s.nBlocked.Add(1)
	}
}

// endBlocked ends c's wait. It returns the reply CLIENT UNBLOCK chose when
// it ended the wait (a null array for TIMEOUT, the UNBLOCKED error for
// ERROR), else nil.
func (s *Server) endBlocked(c *client) reply {
	st := c.block.Swap(blockNone)
	if st != blockNone {
		s.nBlocked.Add(-1)
	}
	switch st {
	case blockUnblockedTimeout:
		return engine.NullArray{}
	case blockUnblockedError:
		return errUnblocked
	}
	return nil
}

// attempt runs one non-blocking try of a blocked read.
func (s *Server) attempt(c *client, cmd *command.Command, shard, slot int, argv [][]byte, asking bool) reply {
	switch {
	case cmd.Kind == command.KindWrite && asking:
		return s.writeAsking(c, shard, slot, argv)
	case cmd.Kind == command.KindWrite:
		return s.writeOne(c, shard, slot, argv)
	}
	return s.readAsk(c, shard, slot, argv, asking)
}

// resolveDollar replaces XREAD's "$" IDs by the streams' current last IDs.
func (s *Server) resolveDollar(c *client, shard, slot int, argv [][]byte, keyIdx []int) ([][]byte, reply) {
	n := len(keyIdx)
	out := append([][]byte(nil), argv...)
	var need []int
	for _, k := range keyIdx {
		if idPos := k + n; idPos < len(out) && string(out[idPos]) == "$" {
			need = append(need, k)
		}
	}
	if len(need) == 0 {
		return argv, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	err := s.be.Read(ctx, shard, c.readonly, func(e *engine.Engine) {
		now := e.ReadTime(nowMs())
		for _, k := range need {
			out[k+n] = []byte(e.LastID(now, out[k]).String())
		}
	})
	if err != nil {
		return nil, s.mapReadError(err, slot)
	}
	return out, nil
}

// peerClosed reports whether the client has closed its side of the
// connection, without consuming any bytes it sent.
func peerClosed(c *client) bool {
	_, closed := wire.Peek(c.conn.nc)
	return closed
}
