package workload

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite jepsen/testdata fixtures from fresh runs")

// countingConn counts ok XADDs sent through it.
type countingConn struct {
	Conn
	adds atomic.Int64
}

func (c *countingConn) Do(ctx context.Context, args ...any) (any, error) {
	r, err := c.Conn.Do(ctx, args...)
	if err == nil && len(args) > 0 && args[0] == "XADD" {
		c.adds.Add(1)
	}
	return r, err
}

// waitUntil polls cond every 5ms until it holds or d passes.
func waitUntil(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestUnsafeFailoverIsFlagged records a real failure: Redis's asynchronous
// replication with a replica promoted while the old primary still accepts
// (and acknowledges) writes, then clients moved to the new primary. Writes
// acknowledged by the old primary after the promotion are lost; the lost and
// linearizable checkers must say so. With -update-fixtures the history is
// saved as jepsen/testdata/redis-unsafe-failover.jsonl.
func TestUnsafeFailoverIsFlagged(t *testing.T) {
	primary, replica := testkit.StartRedis(t, "--repl-diskless-sync-delay", "0"), testkit.StartRedis(t)
	pc, rc := NewClient(primary, 2*time.Second), NewClient(replica, 2*time.Second)
	defer pc.Close()
	defer rc.Close()
	ctx := context.Background()
	host, port, _ := strings.Cut(primary, ":")
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(10*time.Second, func() bool {
		s, _ := rc.Info(ctx, "replication").Result()
		return strings.Contains(s, "master_link_status:up")
	}) {
		t.Fatal("replica never synced")
	}
	old := &countingConn{Conn: Redis{pc}}
	var cur atomic.Pointer[Conn]
	var c Conn = old
	cur.Store(&c)
	target := func(int) Conn { return *cur.Load() }
	const fault = "failover: promote replica, old primary still serving"
	nemesis := func(w *history.Writer) {
		if !waitUntil(5*time.Second, func() bool { return old.adds.Load() >= 40 }) {
			t.Error("workload made no progress before the failover")
		}
		w.Nemesis(history.Start, fault)
		if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
			t.Error(err)
		}
		before := old.adds.Load()
		if !waitUntil(5*time.Second, func() bool { return old.adds.Load() >= before+10 }) {
			t.Error("no writes reached the old primary after the promotion")
		}
		var n Conn = Redis{rc}
		cur.Store(&n)
		w.Nemesis(history.Stop, fault)
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	cfg := Config{Keys: []string{"s0", "s1"}, Clients: 4, Seed: seed}
	h := record(t, cfg, 150, target, nemesis)
	rs := checker.Run(h, checker.Options{})
	var out bytes.Buffer
	_ = report.Summary(&out, rs)
	t.Logf("%d events\n%s", len(h), out.String())
	verdict := map[string]checker.Valid{}
	for _, r := range rs {
		verdict[r.Name] = r.Valid
	}
	for _, name := range []string{"lost", "linearizable"} {
		if verdict[name] != checker.Illegal {
			t.Errorf("%s: %s, want illegal", name, verdict[name])
		}
	}
	if report.ExitCode(rs, nil) != report.ExitInvalid {
		t.Error("exit code does not say invalid")
	}
	if *updateFixtures {
		saveFixture(t, "redis-unsafe-failover.jsonl", h)
	}
}

func saveFixture(t *testing.T, name string, h history.History) {
	var buf bytes.Buffer
	if err := h.Write(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "testdata", name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, buf.Len())
}
