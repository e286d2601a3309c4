package workload

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestCrashWithoutPersistenceIsFlagged records a real failure: redis-server
// without persistence is killed (SIGKILL) mid-run and restarted, losing
// everything it had acknowledged; an operator recreates the group. The lost
// and linearizable checkers must say so. With -update-fixtures the history
// is saved as jepsen/testdata/redis-crash-no-persistence.jsonl.
func TestCrashWithoutPersistenceIsFlagged(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found: %v", err)
	}
	port := testkit.FreePort(t)
	n := &local.Node{Name: "redis", Bin: bin, Port: port, Dir: filepath.Join(t.TempDir(), "redis"),
		Args: []string{"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--save", "", "--appendonly", "no"}}
	if err := n.Start(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	defer n.Kill()
	c := NewClient(n.Addr(), 200*time.Millisecond)
	defer c.Close()
	conn := &countingConn{Conn: Redis{c}}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	cfg := Config{Keys: []string{"s0", "s1"}, Clients: 4, Seed: seed, Timeout: 200 * time.Millisecond}
	var ops atomic.Pointer[Workload]
	nemesis := func(w *history.Writer) {
		if !waitUntil(5*time.Second, func() bool { return conn.adds.Load() >= 40 }) {
			t.Error("workload made no progress before the crash")
		}
		const fault = "kill -9 redis-server (no persistence), restart"
		w.Nemesis(history.Start, fault)
		if err := n.Restart(5 * time.Second); err != nil {
			t.Error(err)
		}
		if err := ops.Load().Setup(context.Background()); err != nil { // the operator recreates the group
			t.Error(err)
		}
		w.Nemesis(history.Stop, fault)
	}
	h := recordWith(t, cfg, 150, func(int) Conn { return conn }, nemesis, func(wl *Workload) { ops.Store(wl) })
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
	if *updateFixtures {
		saveFixture(t, "redis-crash-no-persistence.jsonl", h)
	}
}
