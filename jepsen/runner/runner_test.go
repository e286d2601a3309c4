package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestMain lets TestRaftstreamMembershipChange build the server once
// (testkit.Server), without -race: the run's timeouts are the broker's.
func TestMain(m *testing.M) { testkit.Main(m, false) }

func redisConfig(t *testing.T, persist bool, faults ...string) Config {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found: %v", err)
	}
	args := []string{"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--save", ""}
	if persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	return Config{Bin: bin, Args: args, Out: t.TempDir(), Clients: 4, Keys: 2, Seed: seed,
		OpTimeout: 100 * time.Millisecond, Duration: 1500 * time.Millisecond,
		Faults: faults, FaultEvery: 150 * time.Millisecond, FaultFor: 150 * time.Millisecond,
		Delay: 20 * time.Millisecond}
}

func run(t *testing.T, cfg Config) *Outcome {
	t.Helper()
	out, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	_ = report.Summary(&sum, out.Results)
	t.Logf("%d events\n%s", len(out.History), sum.String())
	for _, f := range []string{"history.jsonl", "report.html", "n1.log"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Errorf("run left no %s: %v", f, err)
		}
	}
	return out
}

// TestRedisWithFsyncAlwaysSurvives: redis-server with appendfsync always
// loses nothing across SIGKILL, pauses and a faulty client link, so the run
// must be valid (exit 0) and its history must show every fault.
func TestRedisWithFsyncAlwaysSurvives(t *testing.T) {
	cfg := redisConfig(t, true, FaultKill, FaultStall, FaultPause, FaultReset, FaultDelay, FaultBlackhole)
	out := run(t, cfg)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	faults, heal := out.History.Faults()
	var names []string
	for _, f := range faults {
		names = append(names, f.Fault)
	}
	// The faults come in the configured order; how many fit in the run
	// depends on how fast the killed server restarts (slow on a loaded
	// machine), so the kill and at least one more are required.
	want := []string{"kill n1", "stall n1", "pause n1", "reset n1", "delay 20ms n1", "blackhole n1"}
	if heal < 0 || len(faults) < 2 || len(names) > len(want) || !slices.Equal(names, want[:len(names)]) {
		t.Fatalf("faults %v heal %d, want a prefix of at least 2 of %v", names, heal, want)
	}
	if code := out.ExitCode(); code != report.ExitValid {
		t.Fatalf("exit %d, want %d (valid)", code, report.ExitValid)
	}
	info := 0
	for _, o := range out.History.Ops() {
		if o.Type == history.Info {
			info++
		}
	}
	if info == 0 {
		t.Error("faults produced no unknown outcomes")
	}
}

// TestRedisWithoutPersistenceFails: the same schedule against redis-server
// without persistence loses acknowledged writes at the first SIGKILL; the
// run must be invalid (exit 1) with lost writes in the report.
func TestRedisWithoutPersistenceFails(t *testing.T) {
	cfg := redisConfig(t, false, FaultKill)
	cfg.Duration = 600 * time.Millisecond
	out := run(t, cfg)
	if code := out.ExitCode(); code != report.ExitInvalid {
		t.Fatalf("exit %d, want %d (invalid)", code, report.ExitInvalid)
	}
	for _, r := range out.Results {
		if r.Name == "lost" && r.Valid != checker.Illegal {
			t.Fatalf("lost: %s", r.Valid)
		}
	}
	b, _ := os.ReadFile(out.Report)
	if !strings.Contains(string(b), "lost: acknowledged") && !strings.Contains(string(b), "acknowledged xadd") {
		t.Error("report.html does not show the lost writes")
	}
}

func TestValidate(t *testing.T) {
	good := Config{Addr: "127.0.0.1:1", Out: "x", Clients: 1, Keys: 1, OpTimeout: 1, Duration: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"both":         func(c *Config) { c.Bin = "x" },
		"no out":       func(c *Config) { c.Out = "" },
		"no clients":   func(c *Config) { c.Clients = 0 },
		"kill w/o bin": func(c *Config) { c.Faults = []string{FaultKill}; c.FaultEvery, c.FaultFor = 1, 1 },
		"unknown":      func(c *Config) { c.Faults = []string{"flood"}; c.FaultEvery, c.FaultFor = 1, 1 },
		"no schedule":  func(c *Config) { c.Faults = []string{FaultStall} },
		"membership w/o cluster": func(c *Config) {
			c.Addr, c.Bin, c.Nodes = "", "x", 1
			c.Faults, c.FaultEvery, c.FaultFor = []string{FaultMembership}, 1, 1
		},
	} {
		c := good
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRaftstreamMembershipChange: a 3-node raftstream cluster under the
// membership fault (a fourth node joins, takes replicas, is drained and
// removed) with kills and partitions around it: the history must show the
// join and the removal windows, the joined node must have held replicas,
// and every checker must pass.
func TestRaftstreamMembershipChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-node raftstream cluster for a minute")
	}
	bin := testkit.Server(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	cfg := Config{Bin: bin, Args: DefaultArgs(3), Nodes: 3, Out: t.TempDir(), Clients: 4, Keys: 2, Seed: seed,
		OpTimeout: 500 * time.Millisecond, Duration: 40 * time.Second,
		Faults:     []string{FaultMembership, FaultKill, FaultPartitionLeader, FaultPartitionOne},
		FaultEvery: time.Second, FaultFor: 2 * time.Second, Delay: 20 * time.Millisecond}
	out := run(t, cfg)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	faults, _ := out.History.Faults()
	var names []string
	for _, f := range faults {
		names = append(names, f.Fault)
	}
	if !slices.Contains(names, "join n4") || !slices.Contains(names, "remove n4") {
		t.Fatalf("faults %v: want a join and a removal of n4", names)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Out, "n4.log"))
	if err != nil || !strings.Contains(string(b), "replica placed here opened") {
		t.Fatalf("n4 never held a replica (%v)", err)
	}
	if code := out.ExitCode(); code != report.ExitValid {
		t.Fatalf("exit %d, want %d (valid)", code, report.ExitValid)
	}
}

// TestRunningServerTwice: two runs against the same running server (Addr,
// as the external driver does) are both valid: the second one must not
// read the first one's entries as writes nobody made.
func TestRunningServerTwice(t *testing.T) {
	cfg := redisConfig(t, true, FaultStall, FaultReset)
	port := testkit.FreePort(t)
	n := &local.Node{Name: "r", Bin: cfg.Bin, Args: cfg.Args, Port: port, Dir: t.TempDir()}
	if err := n.Start(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(5 * time.Second) })
	cfg.Bin, cfg.Args, cfg.Addr = "", nil, n.Addr()
	for i := 0; i < 2; i++ {
		cfg.Out = t.TempDir()
		out, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if code := out.ExitCode(); code != report.ExitValid {
			var sum bytes.Buffer
			_ = report.Summary(&sum, out.Results)
			t.Fatalf("run %d: exit %d, want %d (valid)\n%s", i+1, code, report.ExitValid, sum.String())
		}
	}
}

// TestContextEndsMidRun: when Run's context ends in the middle of the
// faulty phase (a soak's time budget, an interrupt), the run still heals,
// runs its final phase and is checked: a valid server gives a valid run
// whose history has ok operations after the final heal, not a liveness
// failure with "context canceled" in the heal.
func TestContextEndsMidRun(t *testing.T) {
	cfg := redisConfig(t, true, FaultKill, FaultStall, FaultPause)
	cfg.Duration = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	_ = report.Summary(&sum, out.Results)
	t.Logf("%d events in %v, cut after %v\n%s", len(out.History), time.Since(start), out.Cut, sum.String())
	if out.Err != nil {
		t.Fatalf("harness: %v", out.Err)
	}
	if out.Cut <= 0 || out.Cut >= cfg.Duration {
		t.Fatalf("Cut %v: the faulty phase should have been cut by the context", out.Cut)
	}
	if code := out.ExitCode(); code != report.ExitValid {
		t.Fatalf("exit %d, want %d (valid)\n%s", code, report.ExitValid, sum.String())
	}
	_, heal := out.History.Faults()
	if heal < 0 {
		t.Fatal("no heal in the history")
	}
	final := 0
	for _, o := range out.History.Ops() {
		if o.Type == history.OK && o.Call > heal {
			final++
		}
	}
	if final == 0 {
		t.Fatal("no ok operation after the final heal")
	}
	b, _ := os.ReadFile(out.Report)
	if !strings.Contains(string(b), "faulty phase cut after") {
		t.Error("report.html does not say the faulty phase was cut")
	}
}

// TestRelativePaths: a binary given as a relative path and a relative Out
// (as "jepsen run -bin ./raftstream -out jepsen-out" gives them) work: the
// nodes run in their data directories, so both are resolved first, and
// the node data is not nested under itself.
func TestRelativePaths(t *testing.T) {
	cfg := redisConfig(t, true, FaultStall)
	cfg.Duration = 500 * time.Millisecond
	dir := t.TempDir()
	if err := os.Symlink(cfg.Bin, filepath.Join(dir, "server")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	cfg.Bin, cfg.Out = "./server", "out"
	out, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if code := out.ExitCode(); code != report.ExitValid {
		t.Fatalf("exit %d (%v)", code, out.Err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "history.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "n1", "out")); err == nil {
		t.Fatal("the node's data directory is nested under itself (out/n1/out)")
	}
}
