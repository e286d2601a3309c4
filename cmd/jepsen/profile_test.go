package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/runner"
	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/jepsen/workload"
)

// TestCIProfileCoversEverything: the ci profile runs every fault and every
// workload mix on 3 nodes, and its faulty phases fit the 3-minute budget.
func TestCIProfileCoversEverything(t *testing.T) {
	runs, budget, err := profileRuns("ci", runner.Config{Bin: "/bin/true", Out: "o", Seed: 10}, map[string]bool{})
	if err != nil || budget != 0 {
		t.Fatal(budget, err)
	}
	faults, mixes := map[string]bool{}, map[string]bool{}
	var total time.Duration
	for i, r := range runs {
		if r.Nodes != 3 || r.Seed != 10+int64(i) {
			t.Errorf("run %d: nodes %d seed %d", i, r.Nodes, r.Seed)
		}
		for _, f := range r.Faults {
			faults[f] = true
		}
		mixes[r.Workload] = true
		total += r.Duration
	}
	for _, f := range runner.AllFaults {
		if !faults[f] {
			t.Errorf("fault %s not exercised", f)
		}
	}
	for _, m := range workload.Mixes {
		if !mixes[m] {
			t.Errorf("workload %s not exercised", m)
		}
	}
	if total > 100*time.Second {
		t.Errorf("faulty phases total %v: no room for startup, final phases and checks in 3 minutes", total)
	}
}

// TestProfileFlagsOverride: explicit -nemesis and -workload narrow a
// profile; soak fills -time; -time sets each ci run's length; unknown
// profiles and a profile without -bin are refused.
func TestProfileFlagsOverride(t *testing.T) {
	base := runner.Config{Bin: "/bin/true", Out: "o", Faults: []string{"kill"}, Workload: "idempotent", Duration: 5 * time.Minute}
	runs, budget, err := profileRuns("soak", base, map[string]bool{"nemesis": true, "workload": true, "time": true})
	if err != nil || budget != 5*time.Minute {
		t.Fatalf("budget %v, %v; want 5m", budget, err)
	}
	if len(runs) != 3 || runs[0].Duration != 2*time.Minute || runs[2].Duration != time.Minute || runs[0].Keys != 4 {
		t.Fatalf("soak for 5m: %d runs, first %v, last %v, %d keys; want 2m, 2m, 1m on 4 streams",
			len(runs), runs[0].Duration, runs[len(runs)-1].Duration, runs[0].Keys)
	}
	for _, r := range runs {
		if !slices.Equal(r.Faults, []string{"kill"}) || r.Workload != "idempotent" {
			t.Errorf("override lost: %v %s", r.Faults, r.Workload)
		}
	}
	runs, _, err = profileRuns("ci", base, map[string]bool{"time": true})
	if err != nil || len(runs) != 4 {
		t.Fatalf("ci: %d runs, %v", len(runs), err)
	}
	for _, r := range runs {
		if r.Duration != base.Duration {
			t.Errorf("ci with -time %v: run %s lasts %v", base.Duration, r.Out, r.Duration)
		}
	}
	if _, _, err := profileRuns("nightly", base, nil); err == nil {
		t.Error("unknown profile accepted")
	}
	base.Bin = ""
	if _, _, err := profileRuns("ci", base, nil); err == nil {
		t.Error("profile without -bin accepted")
	}
}

func TestRunRejectsUnknownWorkloadAndBug(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-bin", "/bin/true", "-workload", "nope", "-faults", "", "-out", t.TempDir()}, &out, &errb)
	if code != report.ExitUnknown || !strings.Contains(errb.String(), "unknown workload") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	code = run([]string{"-addr", "127.0.0.1:1", "-nemesis", "partition-leader", "-out", t.TempDir()}, &out, &errb)
	if code != report.ExitUnknown || !strings.Contains(errb.String(), "needs Bin") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestExternalDryRun drives the external (docker) driver in dry-run mode
// against a real redis-server standing in for a published cluster port:
// the run completes, checks pass, and the docker commands are printed.
func TestExternalDryRun(t *testing.T) {
	addr := testkit.StartRedis(t)
	var out, errb bytes.Buffer
	code := run([]string{"-addr", addr, "-docker", "deploy-node1-1", "-docker-network", "deploy_default", "-dry-run",
		"-faults", "kill,pause,partition-one", "-fault-every", "300ms", "-fault-for", "300ms", "-duration", "2s",
		"-clients", "2", "-keys", "1", "-out", t.TempDir()}, &out, &errb)
	if code != report.ExitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"docker kill --signal KILL deploy-node1-1", "docker start deploy-node1-1",
		"docker pause deploy-node1-1", "docker network disconnect --force deploy_default deploy-node1-1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	errb.Reset()
	code = run([]string{"-addr", addr + "," + addr, "-docker", "c1", "-faults", "kill", "-out", t.TempDir()}, &out, &errb)
	if code != report.ExitUnknown || !strings.Contains(errb.String(), "1 containers for 2 addresses") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestRunAllInterrupted: runs not begun when the context ends (SIGTERM to a
// soak) are skipped, not reported as failed harness runs, and the exit code
// says the result is incomplete.
func TestRunAllInterrupted(t *testing.T) {
	runs, budget, err := profileRuns("soak", runner.Config{Bin: "/bin/true", Out: t.TempDir(), Seed: 1}, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := runAll(ctx, runs, budget, &out, &errb)
	if code != report.ExitUnknown || !strings.Contains(out.String(), "interrupted after 0 of") ||
		strings.Contains(out.String(), "harness") || !strings.Contains(out.String(), "0 passed, 0 failed") {
		t.Fatalf("exit %d, output:\n%s%s", code, out.String(), errb.String())
	}
}

// redisArgs start redis-server as the server under test: fsync always, so
// that the checkers must pass.
func redisArgs(t *testing.T) (bin string, args []string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found: %v", err)
	}
	return bin, []string{"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--save", "",
		"--appendonly", "yes", "--appendfsync", "always"}
}

// TestSoakBudgetEndsMidRun: a soak whose time budget ends in the middle of
// a run cuts that run's faulty phase, then heals, drains and checks it in
// full, and begins no further run: a clean server gives exit 0, not a
// liveness failure ("no xadd succeeded after the final heal").
func TestSoakBudgetEndsMidRun(t *testing.T) {
	bin, args := redisArgs(t)
	base := runner.Config{Bin: bin, Args: args, Nodes: 1, Out: t.TempDir(), Clients: 2, Keys: 2, Seed: time.Now().UnixNano(),
		OpTimeout: 200 * time.Millisecond, Faults: []string{runner.FaultStall, runner.FaultReset, runner.FaultPause},
		FaultEvery: 200 * time.Millisecond, FaultFor: 200 * time.Millisecond, Duration: 4 * time.Second}
	t.Logf("seed %d", base.Seed)
	var runs []runner.Config
	for i, m := range []string{workload.MixAll, workload.MixGroup} {
		c := base
		c.Out, c.Workload, c.Seed = filepath.Join(base.Out, fmt.Sprintf("%d-%s", i+1, m)), m, base.Seed+int64(i)
		runs = append(runs, c)
	}
	var out, errb bytes.Buffer
	start := time.Now()
	code := runAll(context.Background(), runs, 1500*time.Millisecond, &out, &errb)
	t.Logf("%v\n%s", time.Since(start), out.String())
	if code != report.ExitValid {
		t.Fatalf("exit %d, want %d\n%s", code, report.ExitValid, errb.String())
	}
	for _, want := range []string{"== run 1-all", "faulty phase cut after", "time budget (-time) is used up",
		"== time budget 1.5s used up after 1 runs", "7 passed, 0 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the output", want)
		}
	}
	if strings.Contains(out.String(), "== run 2-group") {
		t.Error("a run began after the budget was used up")
	}
}

// TestProfileTwiceInOneFolder: "jepsen --profile …" performs the profile
// once (no second, broken run), and a second invocation with the same -out
// starts from fresh node data in a directory of its own, with latest
// pointing at it.
func TestProfileTwiceInOneFolder(t *testing.T) {
	bin, args := redisArgs(t)
	dir := t.TempDir()
	var dirs []string
	for i := 0; i < 2; i++ {
		var out, errb bytes.Buffer
		code := dispatch([]string{"--profile", "soak", "-bin", bin, "-args", strings.Join(args, " "), "-nodes", "1",
			"-time", "1s", "-faults", "stall,reset", "-fault-every", "200ms", "-fault-for", "200ms",
			"-clients", "2", "-keys", "1", "-out", dir}, &out, &errb)
		if code != report.ExitValid {
			t.Fatalf("invocation %d: exit %d\n%s\n%s", i+1, code, out.String(), errb.String())
		}
		if n := strings.Count(out.String(), "== all runs"); n != 1 {
			t.Fatalf("invocation %d: %d profile summaries\n%s", i+1, n, out.String())
		}
		first, _, _ := strings.Cut(out.String(), "\n")
		d, ok := strings.CutPrefix(first, "output ")
		if !ok || filepath.Dir(d) != dir {
			t.Fatalf("invocation %d: first line %q, want output %s/<time>", i+1, first, dir)
		}
		if _, err := os.Stat(filepath.Join(d, "1-all", "history.jsonl")); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("both invocations wrote into %s", dirs[0])
	}
	if l, err := os.Readlink(filepath.Join(dir, "latest")); err != nil || l != filepath.Base(dirs[1]) {
		t.Fatalf("latest -> %q (%v), want %s", l, err, filepath.Base(dirs[1]))
	}
}
