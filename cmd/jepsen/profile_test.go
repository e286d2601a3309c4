package main

import (
	"bytes"
	"context"
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
	runs, err := profileRuns("ci", runner.Config{Bin: "/bin/true", Out: "o", Seed: 10}, map[string]bool{})
	if err != nil {
		t.Fatal(err)
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
// profile; soak fills -time; unknown profiles and a profile without -bin
// are refused.
func TestProfileFlagsOverride(t *testing.T) {
	base := runner.Config{Bin: "/bin/true", Out: "o", Faults: []string{"kill"}, Workload: "idempotent", Duration: 12 * time.Minute}
	runs, err := profileRuns("soak", base, map[string]bool{"nemesis": true, "workload": true, "time": true})
	if err != nil {
		t.Fatal(err)
	}
	base.Duration = 5 * time.Minute
	runs, err = profileRuns("soak", base, map[string]bool{"nemesis": true, "workload": true, "time": true})
	if err != nil {
		t.Fatal(err)
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
	if _, err := profileRuns("nightly", base, nil); err == nil {
		t.Error("unknown profile accepted")
	}
	base.Bin = ""
	if _, err := profileRuns("ci", base, nil); err == nil {
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
	runs, err := profileRuns("soak", runner.Config{Bin: "/bin/true", Out: t.TempDir(), Seed: 1}, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := runAll(ctx, runs, &out, &errb)
	if code != report.ExitUnknown || !strings.Contains(out.String(), "interrupted after 0 of") ||
		strings.Contains(out.String(), "harness") || !strings.Contains(out.String(), "0 passed, 0 failed") {
		t.Fatalf("exit %d, output:\n%s%s", code, out.String(), errb.String())
	}
}
