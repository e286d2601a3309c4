package fsm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm/nodelog"
)

// Test commands, claimed by execHook before the engine sees them, so the
// FSM's guarantees can be tested with replicated state whatever commands the
// engine implements. The state they drive is the engine configuration, which
// is replicated (log, snapshots) like any other:
//
//	T.INCR   NodeMaxEntries += 1; reply the new value (a log position proxy)
//	T.NOW    reply the apply time (unix ms)
//	T.SLEEP ms  block the apply for ms milliseconds; reply OK
func TestMain(m *testing.M) {
	execHook = func(e *engine.Engine, now int64, argv [][]byte) (engine.Reply, bool) {
		switch string(argv[0]) {
		case "T.INCR":
			c := e.Config()
			c.NodeMaxEntries++
			e.SetConfig(c)
			return engine.Integer(c.NodeMaxEntries), true
		case "T.NOW":
			return engine.Integer(now), true
		case "T.SLEEP":
			ms, _ := strconv.Atoi(string(argv[1]))
			time.Sleep(time.Duration(ms) * time.Millisecond)
			return engine.OK, true
		}
		return nil, false
	}
	storeHook = func([]*raft.Log) {
		if d := storeDelay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
	}
	os.Exit(m.Run())
}

// storeDelay, when positive, is added to every log write of every shard in
// the test binary (a slow disk). Only tests that do not run in parallel
// set it, and they reset it.
var storeDelay atomic.Int64

func cmd(args ...string) [][]byte {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	return argv
}

func unit(cmds ...[][]byte) Unit { return Unit(cmds) }

var incr = unit(cmd("T.INCR"))

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testRaftLogger is testLogger for hashicorp/raft's logs (Config.RaftLogger,
// transports).
func testRaftLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Warn})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// newTransport listens on addr ("127.0.0.1:0" for a free port).
func newTransport(t testing.TB, addr string) *raft.NetworkTransport {
	t.Helper()
	var tr *raft.NetworkTransport
	var err error
	// The port of a just-closed transport may take a moment to free up.
	for deadline := time.Now().Add(5 * time.Second); ; {
		tr, err = raft.NewTCPTransportWithLogger(addr, nil, 3, 2*time.Second, testRaftLogger(t))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("transport %s: %v", addr, err)
	}
	return tr
}

// replica is a shard plus what is needed to reopen it.
type replica struct {
	*Shard
	dir  string
	id   raft.ServerID
	addr raft.ServerAddress
	tr   *raft.NetworkTransport
	nl   *nodelog.Log // the replica's own node log (LogStoreNode), or nil
}

// openReplica opens a shard in dir on its own TCP transport at addr.
func openReplica(t testing.TB, dir string, id raft.ServerID, addr string, mod func(*Config)) *replica {
	t.Helper()
	tr := newTransport(t, addr)
	cfg := DefaultConfig()
	cfg.Dir, cfg.LocalID, cfg.Transport, cfg.Logger, cfg.RaftLogger = dir, id, tr, testLogger(t), testRaftLogger(t)
	cfg.Engine.NodeMaxEntries = 0 // T.INCR's counter starts at 0
	if mod != nil {
		mod(&cfg)
	}
	var nl *nodelog.Log
	if (cfg.LogStore == LogStoreNode || cfg.LogStore == "") && cfg.NodeLog == nil {
		// The default store. A node log of the replica's own, next to its directory (so a
		// reopened replica finds it).
		var err error
		nl, err = nodelog.Open(nodelog.Options{Dir: dir + ".nodelog", NoSync: cfg.NoSync, Logger: cfg.Logger})
		if err != nil {
			tr.Close()
			t.Fatalf("open the node log of %s: %v", id, err)
		}
		cfg.NodeLog = nl
	}
	s, err := Open(cfg)
	if err != nil {
		tr.Close()
		if nl != nil {
			nl.Close()
		}
		t.Fatalf("open %s: %v", id, err)
	}
	r := &replica{Shard: s, dir: dir, id: id, addr: tr.LocalAddr(), tr: tr, nl: nl}
	t.Cleanup(func() { r.close(t) })
	return r
}

func (r *replica) close(t testing.TB) {
	if err := r.Shard.Close(); err != nil {
		t.Errorf("close %s: %v", r.id, err)
	}
	r.tr.Close()
	if r.nl != nil {
		if err := r.nl.Close(); err != nil {
			t.Errorf("close the node log of %s: %v", r.id, err)
		}
	}
}

func (r *replica) server() raft.Server {
	return raft.Server{Suffrage: raft.Voter, ID: r.id, Address: r.addr}
}

// singleVoter opens a bootstrapped one-member shard and waits for leadership.
func singleVoter(t testing.TB, mod func(*Config)) *replica {
	t.Helper()
	r := openReplica(t, t.TempDir(), "n1", "127.0.0.1:0", mod)
	if err := r.BootstrapIfEmpty([]raft.Server{r.server()}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, r)
	return r
}

func waitLeader(t testing.TB, r *replica) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !r.IsLeader() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s not leader: %+v", r.id, r.Status())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitFor polls cond every 5ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// apply submits u and waits for its replies.
func apply(t testing.TB, s *Shard, u Unit) []engine.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := s.Submit(u).Wait(ctx)
	if err != nil {
		t.Fatalf("submit %q: %v", u, err)
	}
	return rs
}

// counter reads T.INCR's counter linearizably.
func counter(t testing.TB, s *Shard) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int64
	if err := s.Read(ctx, func(e *engine.Engine) { n = int64(e.Config().NodeMaxEntries) }); err != nil {
		t.Fatalf("read: %v", err)
	}
	return n
}

func isNotLeader(err error) bool {
	var nl *NotLeaderError
	return errors.As(err, &nl)
}

var _ io.Writer = testWriter{}

// checkEntries logs how many log entries s took for three commands since
// its last index was before, and fails unless that is want (0: only log).
func checkEntries(t *testing.T, s *replica, before uint64, what string, want uint64) {
	t.Helper()
	entries := s.Raft().LastIndex() - before
	t.Logf("%s: 3 commands in %d entries", what, entries)
	if want != 0 && entries != want {
		t.Errorf("%s: 3 commands in %d entries, want %d", what, entries, want)
	}
}
