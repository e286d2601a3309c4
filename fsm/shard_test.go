package fsm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
)

func TestSubmitAppliesAndReplies(t *testing.T) {
	s := singleVoter(t, nil)
	if rs := apply(t, s.Shard, incr); len(rs) != 1 || rs[0] != engine.Integer(1) {
		t.Fatalf("T.INCR replies %v, want [1]", rs)
	}
	// A unit applies atomically in order and answers every command; a user
	// error is a reply, not a failure, and does not stop the unit.
	rs := apply(t, s.Shard, unit(cmd("T.INCR"), cmd("NOSUCHCOMMAND", "x"), cmd("T.INCR")))
	if len(rs) != 3 || rs[0] != engine.Integer(2) || rs[2] != engine.Integer(3) {
		t.Fatalf("replies %v", rs)
	}
	if e, ok := rs[1].(*engine.Error); !ok || e.Msg != "ERR unknown command 'NOSUCHCOMMAND'" {
		t.Fatalf("unknown command reply %#v", rs[1])
	}
	if got := apply(t, s.Shard, unit()); len(got) != 0 {
		t.Fatalf("empty unit replies %v", got)
	}
	if n := counter(t, s.Shard); n != 3 {
		t.Fatalf("counter %d, want 3", n)
	}
	// raft publishes the applied index asynchronously: wait for it.
	waitFor(t, 5*time.Second, "applied index to catch up", func() bool {
		st := s.Status()
		return st.AppliedIndex == st.LastIndex
	})
	st := s.Status()
	if st.Role != "leader" || st.LeaderID != "n1" || st.LeaderAddr != string(s.addr) || st.Term == 0 ||
		st.CommitIndex != st.LastIndex || st.LastIndex < 4 {
		t.Fatalf("status %+v", st)
	}
	if id, addr, err := s.WaitForLeader(context.Background()); err != nil || id != "n1" || addr != string(s.addr) {
		t.Fatalf("WaitForLeader = %q %q %v", id, addr, err)
	}
}

func TestSubmitValidationSkipsRejectedCommands(t *testing.T) {
	old := validateCommand
	validateCommand = func(_ int64, argv [][]byte) *engine.Error {
		if string(argv[0]) == "BAD" {
			return engine.ErrSyntax
		}
		return nil
	}
	t.Cleanup(func() { validateCommand = old })
	s := singleVoter(t, nil)
	before := s.Raft().LastIndex()
	rs := apply(t, s.Shard, unit(cmd("BAD")))
	if len(rs) != 1 || rs[0] != engine.ErrSyntax {
		t.Fatalf("replies %v", rs)
	}
	if s.Raft().LastIndex() != before {
		t.Fatalf("a rejected unit was proposed")
	}
	rs = apply(t, s.Shard, unit(cmd("T.INCR"), cmd("BAD"), cmd("T.INCR")))
	if len(rs) != 3 || rs[0] != engine.Integer(1) || rs[1] != engine.ErrSyntax || rs[2] != engine.Integer(2) {
		t.Fatalf("replies %v", rs)
	}
}

// TestBatching: many concurrent submitters share log entries.
func TestBatching(t *testing.T) {
	s := singleVoter(t, nil)
	const writers, each = 50, 40
	before := s.Raft().LastIndex()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.Submit(incr).Wait(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries := s.Raft().LastIndex() - before
	t.Logf("%d commands in %d log entries", writers*each, entries)
	if entries*5 > writers*each {
		t.Fatalf("%d commands took %d log entries; want at most a fifth", writers*each, entries)
	}
	if n := counter(t, s.Shard); n != writers*each {
		t.Fatalf("counter %d, want %d", n, writers*each)
	}
}

// TestOrderPreserved: one goroutine's submissions apply in submission order
// even when it does not wait in between, across batches.
func TestOrderPreserved(t *testing.T) {
	s := singleVoter(t, func(c *Config) { c.MaxBatchCommands = 7 })
	const writers, each = 8, 100
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			futs := make([]*Future, each)
			for i := range futs {
				futs[i] = s.Submit(incr)
			}
			last := int64(0)
			for i, f := range futs {
				rs, err := f.Wait(context.Background())
				if err != nil {
					t.Errorf("submission %d: %v", i, err)
					return
				}
				v := int64(rs[0].(engine.Integer))
				if v <= last {
					t.Errorf("submission %d applied at %d, after one applied at %d", i, v, last)
				}
				last = v
			}
		}()
	}
	wg.Wait()
}

// TestClockNeverRunsBackwards: the apply time is max(entry time, last).
func TestClockNeverRunsBackwards(t *testing.T) {
	var mu sync.Mutex
	clock := time.UnixMilli(1_000_000)
	s := singleVoter(t, func(c *Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	})
	now := func() int64 { return int64(apply(t, s.Shard, unit(cmd("T.NOW")))[0].(engine.Integer)) }
	if got := now(); got != 1_000_000 {
		t.Fatalf("now %d, want the leader clock 1000000", got)
	}
	mu.Lock()
	clock = time.UnixMilli(500_000) // the leader clock jumps back
	mu.Unlock()
	if got := now(); got != 1_000_000 {
		t.Fatalf("now %d after a backwards jump, want 1000000", got)
	}
	mu.Lock()
	clock = time.UnixMilli(2_000_000)
	mu.Unlock()
	if got := now(); got != 2_000_000 {
		t.Fatalf("now %d, want 2000000", got)
	}
}

func TestRestartFromLog(t *testing.T) {
	s := singleVoter(t, nil)
	for i := 0; i < 30; i++ {
		apply(t, s.Shard, incr)
	}
	s.close(t)
	r := openReplica(t, s.dir, s.id, string(s.addr), nil)
	if err := r.BootstrapIfEmpty([]raft.Server{r.server()}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, r)
	if n := counter(t, r.Shard); n != 30 {
		t.Fatalf("counter after restart %d, want 30", n)
	}
	if rs := apply(t, r.Shard, incr); rs[0] != engine.Integer(31) {
		t.Fatalf("next T.INCR %v, want 31", rs)
	}
}

func TestRestartFromSnapshotAndLog(t *testing.T) {
	var mu sync.Mutex
	clock := time.UnixMilli(9_000_000)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	s := singleVoter(t, func(c *Config) { c.Now = now; c.TrailingLogs = 2 })
	for i := 0; i < 20; i++ {
		apply(t, s.Shard, incr)
	}
	if err := s.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		apply(t, s.Shard, incr)
	}
	s.close(t)
	mu.Lock()
	clock = time.UnixMilli(1) // the restarted leader's clock is far behind
	mu.Unlock()
	r := openReplica(t, s.dir, s.id, string(s.addr), func(c *Config) { c.Now = now })
	if got := r.Raft().Stats()["last_snapshot_index"]; got == "0" {
		t.Fatalf("no snapshot on disk")
	}
	waitLeader(t, r)
	if n := counter(t, r.Shard); n != 25 {
		t.Fatalf("counter after restart %d, want 25", n)
	}
	if got := apply(t, r.Shard, unit(cmd("T.NOW")))[0]; got != engine.Integer(9_000_000) {
		t.Fatalf("apply time after restart %v, want the persisted 9000000", got)
	}
}

func TestBusyAndShutdown(t *testing.T) {
	s := singleVoter(t, func(c *Config) { c.QueueDepth = 1; c.MaxInFlight = 1 })
	slow := s.Submit(unit(cmd("T.SLEEP", "300")))
	var busy bool
	var queued []*Future
	for i := 0; i < 50 && !busy; i++ {
		f := s.Submit(incr)
		select {
		case <-f.Done():
			_, err := f.Wait(context.Background())
			busy = errors.Is(err, ErrBusy)
		default:
			queued = append(queued, f)
		}
	}
	if !busy {
		t.Fatalf("a full queue did not report ErrBusy")
	}
	for _, f := range append(queued, slow) {
		if _, err := f.Wait(context.Background()); err != nil {
			t.Fatalf("queued unit: %v", err)
		}
	}
	s.close(t)
	if _, err := s.Submit(incr).Wait(context.Background()); !errors.Is(err, ErrShutdown) {
		t.Fatalf("submit after close: %v", err)
	}
	if err := s.Read(context.Background(), func(*engine.Engine) {}); !errors.Is(err, ErrShutdown) {
		t.Fatalf("read after close: %v", err)
	}
}

func TestApplyTimeoutIsUnknownOutcome(t *testing.T) {
	s := singleVoter(t, func(c *Config) { c.ApplyTimeout = 50 * time.Millisecond })
	_, err := s.Submit(unit(cmd("T.SLEEP", "300"), cmd("T.INCR"))).Wait(context.Background())
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("err %v, want ErrUnknownOutcome", err)
	}
	// It did apply after all: unknown means unknown, not "not applied".
	waitFor(t, 5*time.Second, "the slow unit to apply", func() bool {
		var n int
		s.StaleRead(func(e *engine.Engine) { n = e.Config().NodeMaxEntries })
		return n == 1
	})
}

// clusterOf3 opens three bootstrapped voters on loopback TCP.
// clusterOf3 opens and bootstraps three replicas n1..n3, with mods applied
// to their config after the timeouts.
func clusterOf3(t *testing.T, mods ...func(*Config)) []*replica {
	t.Helper()
	rs := make([]*replica, 3)
	for i := range rs {
		// raft's default timeouts: the race detector on a shared 2-core
		// machine can stall a leader past shorter leases.
		rs[i] = openReplica(t, t.TempDir(), raft.ServerID("n"+strconv.Itoa(i+1)), "127.0.0.1:0", func(c *Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
			for _, m := range mods {
				m(c)
			}
		})
	}
	servers := []raft.Server{rs[0].server(), rs[1].server(), rs[2].server()}
	for _, r := range rs {
		if err := r.BootstrapIfEmpty(servers); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

func leaderOf(t *testing.T, rs []*replica) *replica {
	t.Helper()
	var l *replica
	waitFor(t, 10*time.Second, "a leader", func() bool {
		for _, r := range rs {
			if r.IsLeader() {
				l = r
				return true
			}
		}
		return false
	})
	return l
}

// followerOf returns a replica of rs other than l.
func followerOf(rs []*replica, l *replica) *replica {
	for _, r := range rs {
		if r != l {
			return r
		}
	}
	return nil
}

// TestLeaderKill: writers hammer the leader while it is shut down. Every
// acknowledged write is on the new leader; a write that failed on the old
// leader failed as not-leader / unknown / shutdown, never as a false OK.
func TestLeaderKill(t *testing.T) {
	failoverUnderLoad(t, func(t *testing.T, old *replica) { old.close(t) }, true)
}

// TestLeadershipTransferUnderLoad: the same with a leader that stays up and
// hands leadership over while writes are in flight.
func TestLeadershipTransferUnderLoad(t *testing.T) {
	failoverUnderLoad(t, func(t *testing.T, old *replica) {
		if err := old.Raft().LeadershipTransfer().Error(); err != nil {
			t.Fatalf("leadership transfer: %v", err)
		}
	}, false)
}

// failoverUnderLoad runs writers against the leader, applies fault to it,
// and checks that every acknowledged write is on the new leader and that
// failures are reported as not-leader, unknown or shutdown.
func failoverUnderLoad(t *testing.T, fault func(*testing.T, *replica), killed bool) {
	rs := clusterOf3(t)
	old := leaderOf(t, rs)
	if err := old.Read(context.Background(), func(*engine.Engine) {}); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r != old {
			if err := r.Read(context.Background(), func(*engine.Engine) {}); !isNotLeader(err) {
				t.Fatalf("read on follower %s: %v, want NotLeaderError", r.id, err)
			}
			if _, err := r.Submit(incr).Wait(context.Background()); !isNotLeader(err) {
				t.Fatalf("submit on follower %s: %v, want NotLeaderError", r.id, err)
			}
			// The leader's barrier needs one follower; the other learns of
			// the leader from its next AppendEntries.
			var named string
			waitFor(t, 5*time.Second, "the follower to name the leader", func() bool {
				var nl *NotLeaderError
				errors.As(r.Read(context.Background(), func(*engine.Engine) {}), &nl)
				named = nl.LeaderID
				return named == string(old.id)
			})
			if named != string(old.id) {
				t.Fatalf("follower names leader %q, want %q", named, old.id)
			}
		}
	}

	var (
		mu       sync.Mutex
		maxAcked int64
		outcomes = map[string]int{}
		acked    = map[string]string{} // entry ID → field of acknowledged XADDs
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				field := fmt.Sprintf("w%d-%d", w, i)
				res, err := old.Submit(unit(cmd("T.INCR"), cmd("XADD", "s", "*", "f", field))).Wait(ctx)
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					maxAcked = max(maxAcked, int64(res[0].(engine.Integer)))
					acked[string(res[1].(engine.BulkString))] = field
					outcomes["ok"]++
				case isNotLeader(err):
					outcomes["notleader"]++
				case errors.Is(err, ErrUnknownOutcome):
					outcomes["unknown"]++
				case errors.Is(err, ErrShutdown):
					outcomes["shutdown"]++
				default:
					t.Errorf("unexpected error %v", err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	waitFor(t, 10*time.Second, "some acknowledged writes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return outcomes["ok"] >= 200
	})
	fault(t, old)
	close(stop)
	wg.Wait()

	var rest []*replica
	for _, r := range rs {
		if r != old || !killed {
			rest = append(rest, r)
		}
	}
	nl := leaderOf(t, rest)
	n := counter(t, nl.Shard)
	t.Logf("outcomes %v; max acknowledged %d; new leader %s has %d", outcomes, maxAcked, nl.id, n)
	if n < maxAcked {
		t.Fatalf("acknowledged write %d lost: new leader has %d", maxAcked, n)
	}
	// Every acknowledged XADD is on the new leader, with its field, once.
	var entries engine.Reply
	if err := nl.Read(context.Background(), func(e *engine.Engine) { entries = e.Exec(0, cmd("XRANGE", "s", "-", "+")) }); err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	seenField := map[string]bool{}
	for _, r := range entries.(engine.Array) {
		e := r.(engine.Array)
		id, field := string(e[0].(engine.BulkString)), string(e[1].(engine.Array)[1].(engine.BulkString))
		if seenField[field] {
			t.Fatalf("write %s applied twice", field)
		}
		seenField[field] = true
		have[id] = field
	}
	for id, field := range acked {
		if have[id] != field {
			t.Fatalf("acknowledged XADD %s (%s) missing on the new leader (has %q)", id, field, have[id])
		}
	}
	if int64(len(have)) != n {
		t.Fatalf("stream has %d entries, counter %d: units not atomic", len(have), n)
	}
	// The new leader keeps serving, and the survivor converges on it.
	next := apply(t, nl.Shard, incr)[0].(engine.Integer)
	if int64(next) != n+1 {
		t.Fatalf("next T.INCR %d, want %d", next, n+1)
	}
	for _, r := range rest {
		waitFor(t, 5*time.Second, fmt.Sprintf("%s to apply %d", r.id, next), func() bool {
			var v int
			r.StaleRead(func(e *engine.Engine) { v = e.Config().NodeMaxEntries })
			return v == int(next)
		})
	}
}

// TestReadNeedsQuorum: a leader cut off from its followers must not serve a
// linearizable read (its fence cannot commit), while StaleRead still works.
func TestReadNeedsQuorum(t *testing.T) {
	rs := clusterOf3(t)
	l := leaderOf(t, rs)
	apply(t, l.Shard, incr)
	for _, r := range rs {
		if r != l {
			r.close(t)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	called := false
	err := l.Read(ctx, func(*engine.Engine) { called = true })
	if err == nil || called {
		t.Fatalf("read without a quorum: err %v, fn called %v", err, called)
	}
	if !isNotLeader(err) && !errors.Is(err, ErrUnknownOutcome) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read without a quorum: unexpected error %v", err)
	}
	var n int
	l.StaleRead(func(e *engine.Engine) { n = e.Config().NodeMaxEntries })
	if n != 1 {
		t.Fatalf("stale read %d, want 1", n)
	}
}

// TestLingerCarriesCommandsArrivingDuringAWrite: with a slow disk, two
// commands submitted while the leader writes an entry both go into the next
// entry. Without linger the batcher forms that entry at once, with the
// first of them only, and the second waits for a third entry.
func TestLingerCarriesCommandsArrivingDuringAWrite(t *testing.T) {
	for _, tc := range []struct {
		linger time.Duration
		want   uint64 // entries for the three commands; 0 = only logged
	}{{10 * time.Second, 2}, {0, 0}} {
		s := singleVoter(t, func(c *Config) { c.MaxLinger = tc.linger })
		if _, err := s.Submit(incr).Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		storeDelay.Store(int64(time.Second))
		before, begun := s.Raft().LastIndex(), s.logs.begun.Load()
		f1 := s.Submit(incr)
		waitFor(t, 10*time.Second, "the first entry's write to begin", func() bool { return s.logs.begun.Load() > begun })
		f2 := s.Submit(incr)
		time.Sleep(100 * time.Millisecond)
		f3 := s.Submit(incr)
		for i, f := range []*Future{f1, f2, f3} {
			rs, err := f.Wait(context.Background())
			if err != nil {
				storeDelay.Store(0)
				t.Fatalf("command %d: %v", i+1, err)
			}
			if got := int64(rs[0].(engine.Integer)); got != int64(i+2) {
				t.Errorf("command %d applied as increment %d, want %d", i+1, got, i+2)
			}
		}
		storeDelay.Store(0)
		checkEntries(t, s, before, fmt.Sprintf("MaxLinger %v", tc.linger), tc.want)
		s.close(t)
	}
}

// countingTransport counts the AppendEntries RPCs that reach raft through
// the consumer channel: every one but heartbeats (which NetworkTransport
// hands to raft's heartbeat handler directly).
type countingTransport struct {
	*raft.NetworkTransport
	ch      chan raft.RPC
	appends atomic.Int64
}

func (c *countingTransport) Consumer() <-chan raft.RPC { return c.ch }

// TestIdleShardSendsFewAppends: a shard with nothing to replicate sends each
// follower only the periodic AppendEntries that carries the commit index,
// at most one per CommitTimeout (50 ms): at 20 ms these made an idle
// 3-node × 16-shard cluster spend half a core. Heartbeats are not counted.
func TestIdleShardSendsFewAppends(t *testing.T) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // runs after the replicas' cleanups
	rs := make([]*replica, 3)
	cts := make([]*countingTransport, 3)
	for i := range rs {
		rs[i] = openReplica(t, t.TempDir(), raft.ServerID("n"+strconv.Itoa(i+1)), "127.0.0.1:0", func(c *Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
			nt := c.Transport.(*raft.NetworkTransport)
			ct := &countingTransport{NetworkTransport: nt, ch: make(chan raft.RPC)}
			go func() {
				for {
					select {
					case rpc := <-nt.Consumer():
						if _, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
							ct.appends.Add(1)
						}
						select {
						case ct.ch <- rpc:
						case <-done:
							return
						}
					case <-done:
						return
					}
				}
			}()
			cts[i] = ct
			c.Transport = ct
		})
	}
	servers := []raft.Server{rs[0].server(), rs[1].server(), rs[2].server()}
	for _, r := range rs {
		if err := r.BootstrapIfEmpty(servers); err != nil {
			t.Fatal(err)
		}
	}
	l := leaderOf(t, rs)
	apply(t, l.Shard, incr)
	waitFor(t, 5*time.Second, "the followers to apply the write", func() bool {
		for _, r := range rs {
			var n int
			r.StaleRead(func(e *engine.Engine) { n = e.Config().NodeMaxEntries })
			if n != 1 {
				return false
			}
		}
		return true
	})
	const idle, period = 2 * time.Second, 50 * time.Millisecond
	before := make([]int64, len(rs))
	for i := range rs {
		before[i] = cts[i].appends.Load()
	}
	time.Sleep(idle)
	limit := int64(idle/period) + 2
	for i, r := range rs {
		if r == l {
			continue
		}
		n := cts[i].appends.Load() - before[i]
		t.Logf("follower %s: %d appends in %v of idleness", r.id, n, idle)
		if n > limit {
			t.Errorf("follower %s got %d AppendEntries in %v with nothing to replicate, want at most %d (one per %v)", r.id, n, idle, limit, period)
		}
		if n == 0 {
			t.Errorf("follower %s got no AppendEntries in %v: the commit-index refresh is gone (raft's replicate loop)", r.id, idle)
		}
	}
}

// TestSubmitDuringElectionNamesTheNewLeader: a replica that has just lost its
// leader does not answer "leader unknown" at once (a client would get
// TRYAGAIN): it waits for the election and names the winner, or proposes
// the unit itself if it won.
func TestSubmitDuringElectionNamesTheNewLeader(t *testing.T) {
	rs := clusterOf3(t)
	old := leaderOf(t, rs)
	apply(t, old.Shard, incr)
	var rest []*replica
	for _, r := range rs {
		if r != old {
			rest = append(rest, r)
		}
	}
	old.close(t)
	// Catch a survivor in the election: its heartbeat timeout expired and
	// it knows no leader. The window lasts a few round trips, so poll fast.
	var r *replica
	for deadline := time.Now().Add(10 * time.Second); r == nil; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("no survivor was ever seen without a leader")
		}
		for _, x := range rest {
			if id, _ := x.Leader(); id == "" && !x.IsLeader() {
				r = x
				break
			}
		}
	}
	start := time.Now()
	_, err := r.Submit(incr).Wait(context.Background())
	took := time.Since(start)
	var nl *NotLeaderError
	switch {
	case err == nil:
		if !r.IsLeader() {
			t.Fatalf("%s applied the unit but does not lead", r.id)
		}
	case errors.As(err, &nl):
		// No leader after a whole election timeout (a split vote) may
		// still be answered as unknown; at once, it may not.
		if nl.LeaderID == "" && took < 900*time.Millisecond {
			t.Fatalf("%s answered %v after %v, during the election: it should have waited for the new leader", r.id, err, took)
		}
		if nl.LeaderID == string(old.id) || nl.LeaderID == string(r.id) {
			t.Fatalf("%s named %s as the new leader", r.id, nl.LeaderID)
		}
	default:
		t.Fatalf("submit on %s during the election: %v", r.id, err)
	}
	t.Logf("%s during the election: err=%v after %v", r.id, err, took)
}
