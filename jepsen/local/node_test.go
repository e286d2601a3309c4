package local_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// redisNode is a redis-server Node without persistence.
func redisNode(t *testing.T) *local.Node {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found: %v", err)
	}
	port := testkit.FreePort(t)
	n := &local.Node{Name: "r1", Bin: bin, Port: port, Dir: filepath.Join(t.TempDir(), "r1"),
		Args: []string{"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--save", "", "--appendonly", "no"}}
	t.Cleanup(func() { _ = n.Kill() })
	return n
}

func TestNodeKillRestart(t *testing.T) {
	n := redisNode(t)
	if err := n.Start(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !n.Running() {
		t.Fatal("not running after Start")
	}
	if err := n.Start(time.Second); err == nil {
		t.Fatal("second Start of a running node succeeded")
	}
	if n.Pid() == 0 {
		t.Fatal("no Pid while running")
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Running() || local.Ping(n.Addr()) == nil {
		t.Fatal("node answers after Kill")
	}
	if err := n.ExitErr(); err == nil || err.Error() != "signal: killed" || n.Pid() != 0 {
		t.Fatalf("after Kill: ExitErr %v, Pid %d", err, n.Pid())
	}
	if err := n.Restart(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := local.Ping(n.Addr()); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if err := n.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("running after Stop")
	}
	if err := n.ExitErr(); err != nil {
		t.Fatalf("redis-server's exit on SIGTERM: %v", err)
	}
}

func TestNodeStartFailsFast(t *testing.T) {
	n := redisNode(t)
	n.Args = append(n.Args, "--no-such-option", "x") // redis-server exits at once
	start := time.Now()
	if err := n.Start(10 * time.Second); err == nil {
		t.Fatal("started with a bad option")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v to notice the exit", d)
	}
}

func TestNodePauseResume(t *testing.T) {
	n := redisNode(t)
	if err := n.Start(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := local.Ping(n.Addr()); err == nil {
		t.Fatal("paused node answered PING")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := local.WaitPong(n.Addr(), 5*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(); err != nil { // a paused node can still be killed
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
}

// TestNodeWithPasswordStarts: a server that wants a password answers PING
// with -NOAUTH, which is an answer: Start returns once it is given.
func TestNodeWithPasswordStarts(t *testing.T) {
	n := redisNode(t)
	n.Args = append(n.Args, "--requirepass", "s3cret")
	if err := n.Start(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := local.Ping(n.Addr()); err != nil {
		t.Fatal(err)
	}
}

// TestKillAll: KillAll ends every running node this program started (two
// here), by PID, and returns once they are reaped; a node stopped before
// keeps its own exit, and does not start again.
func TestKillAll(t *testing.T) {
	a, b, c := redisNode(t), redisNode(t), redisNode(t)
	for _, n := range []*local.Node{a, b, c} {
		if err := n.Start(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.ReopenAfterKillAll)
	local.KillAll(10 * time.Second)
	// Nothing starts after it: a goroutine still restarting a node while
	// the program ends would leave that node running.
	if err := c.Start(5 * time.Second); err == nil || !strings.Contains(err.Error(), "no new ones start") {
		t.Fatalf("Start after KillAll: %v, want it refused", err)
	}
	if c.Running() || local.Ping(c.Addr()) == nil {
		t.Fatalf("%s serves after KillAll refused its start", c.Addr())
	}
	for _, n := range []*local.Node{a, b} {
		if n.Running() || local.Ping(n.Addr()) == nil {
			t.Fatalf("%s still serves after KillAll", n.Addr())
		}
		if err := n.ExitErr(); err == nil || err.Error() != "signal: killed" {
			t.Fatalf("%s after KillAll: ExitErr %v", n.Addr(), err)
		}
	}
	if err := c.ExitErr(); err != nil { // redis-server exits 0 on SIGTERM
		t.Fatalf("the node stopped before KillAll: ExitErr %v, want its clean exit", err)
	}
}
