package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/runner"
	"github.com/raftstream/raftstream/jepsen/workload"
)

// profileRuns expands a profile into runs. base carries the parsed flags;
// set names the flags given explicitly, which override the profile's
// values (so -seed replays a profile, -nemesis/-workload narrow it).
// budget, when positive, is the wall-clock time the runs get (see runAll).
//
//   - ci: 3 nodes; one run of the mixed workload through every fault, then
//     one run each of the append, group and idempotent mixes through the
//     node, partition and clock faults. About 2.5 minutes; an explicit
//     -time sets every run's faulty phase instead. No budget.
//   - soak: 3 nodes, 4 streams; every fault, the workloads in turn, runs of
//     2 minutes for -time (default 30m), the budget: the run under way when
//     it ends has its faulty phase cut there and is still healed, drained
//     and checked.
func profileRuns(name string, base runner.Config, set map[string]bool) (runs []runner.Config, budget time.Duration, err error) {
	if base.Bin == "" {
		return nil, 0, fmt.Errorf("profile %s needs -bin", name)
	}
	if !set["nodes"] {
		base.Nodes = 3
	}
	if !set["args"] {
		base.Args = runner.DefaultArgs(base.Nodes)
	}
	pick := func(def []string) []string {
		if set["faults"] || set["nemesis"] {
			return base.Faults
		}
		return def
	}
	mix := func(def string) string {
		if set["workload"] {
			return base.Workload
		}
		return def
	}
	// ci: an explicit -time (-duration) is each run's faulty phase (a
	// shorter pass over the same runs)
	length := func(def time.Duration) time.Duration {
		if set["time"] || set["duration"] {
			return base.Duration
		}
		return def
	}
	add := func(tag, mix string, faults []string, d, every, dur time.Duration) {
		c := base
		c.Out = filepath.Join(base.Out, tag)
		c.Workload, c.Faults, c.FaultEvery, c.FaultFor, c.Duration = mix, faults, every, d, dur
		c.Seed = base.Seed + int64(len(runs))
		runs = append(runs, c)
	}
	switch name {
	case "ci":
		add("1-all", mix(workload.MixAll), pick(runner.AllFaults), 2*time.Second, 500*time.Millisecond, length(50*time.Second))
		short := pick([]string{runner.FaultKill, runner.FaultPartitionLeader, runner.FaultClockSkew, runner.FaultPartitionHalves})
		add("2-append", mix(workload.MixAppend), short, 2*time.Second, 500*time.Millisecond, length(10*time.Second))
		add("3-group", mix(workload.MixGroup), short, 2*time.Second, 500*time.Millisecond, length(10*time.Second))
		add("4-idempotent", mix(workload.MixIdempotent), short, 2*time.Second, 500*time.Millisecond, length(10*time.Second))
	case "soak":
		total := base.Duration
		if !set["time"] && !set["duration"] {
			total = 30 * time.Minute
		}
		// Full reads return whole streams, so a history grows with the
		// square of a run's length (a 5-minute run wrote 600 MB): short
		// runs over more streams keep each check fast.
		per := min(2*time.Minute, total)
		if !set["keys"] {
			base.Keys = 4
		}
		if !set["linear-timeout"] {
			// a 2-minute append run's stream (~6000 operations, many of
			// unknown outcome) can take porcupine more than the default 30s
			base.Checker.LinearTimeout = 3 * time.Minute
		}
		// The plan's faulty phases add up to the budget; setup, final
		// phases and checks take time too, so the budget ends during one
		// of the planned runs.
		budget = total
		for i := 0; time.Duration(i)*per < total; i++ {
			m := workload.Mixes[i%len(workload.Mixes)]
			add(fmt.Sprintf("%d-%s", i+1, m), mix(m), pick(runner.AllFaults), 3*time.Second, 2*time.Second,
				min(per, total-time.Duration(i)*per))
		}
	default:
		return nil, 0, fmt.Errorf("unknown profile %q (want ci or soak)", name)
	}
	return runs, budget, nil
}

// errBudget is the cause of a soak run's context ending at its budget.
var errBudget = errors.New("the time budget (-time) is used up")

// runAll performs runs in order, printing each run's summary, then one
// summary of every checker of every run (named run/checker) ending in
// "N passed, N failed". The exit code is the worst of the runs: 1 when a
// checker found an anomaly, else 2 when one could not decide, a harness
// failed or an interrupt (ctx ending) left the runs incomplete, else 0.
//
// budget, when positive, is the wall-clock time of the whole sequence (a
// soak's -time): a run begins only while a quarter of its faulty phase
// still fits, and the run under way when the budget ends stops its faulty
// phase there, then heals, runs its final phase and is checked as usual
// (runner.Run). A budget used up is the soak's planned end, not a failure.
func runAll(ctx context.Context, runs []runner.Config, budget time.Duration, stdout, stderr io.Writer) int {
	var all []checker.Result
	code := report.ExitValid
	worse := func(c int) {
		if c == report.ExitInvalid || code != report.ExitInvalid && c > code {
			code = c
		}
	}
	deadline := time.Now().Add(budget)
	begun := 0
	for _, c := range runs {
		if ctx.Err() != nil {
			break
		}
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if budget > 0 {
			if time.Until(deadline) < c.Duration/4 {
				fmt.Fprintf(stdout, "== time budget %v used up after %d runs\n", budget, begun)
				break
			}
			rctx, cancel = context.WithDeadlineCause(ctx, deadline, errBudget)
		}
		begun++
		tag := filepath.Base(c.Out)
		fmt.Fprintf(stdout, "== run %s: workload %s, faults %s, %v, seed %d\n", tag, c.Workload,
			strings.Join(c.Faults, ","), c.Duration, c.Seed)
		start := time.Now()
		out, err := runner.Run(rctx, c)
		cancel()
		if out == nil && rctx.Err() != nil {
			// cut before its faulty phase began: nothing to check
			fmt.Fprintf(stdout, "run %s not run: %v (%v)\n", tag, context.Cause(rctx), err)
			continue
		}
		if err != nil {
			fmt.Fprintln(stderr, "jepsen:", err)
		}
		if out == nil {
			all = append(all, checker.Result{Name: tag + "/harness", Valid: checker.Unknown, Notes: []string{fmt.Sprint(err)}})
			worse(report.ExitUnknown)
			continue
		}
		if out.Err != nil {
			fmt.Fprintln(stderr, "jepsen: harness:", out.Err)
		}
		fmt.Fprintf(stdout, "%d events in %v; report %s\n", len(out.History), time.Since(start).Round(time.Second), out.Report)
		if out.Cut > 0 {
			fmt.Fprintf(stdout, "faulty phase cut after %v of %v: %v; healed, drained and checked in full\n",
				out.Cut.Round(time.Second), c.Duration, context.Cause(rctx))
		}
		_ = report.Summary(stdout, out.Results)
		for _, r := range out.Results {
			r.Name = tag + "/" + r.Name
			all = append(all, r)
		}
		worse(out.ExitCode())
	}
	if ctx.Err() != nil { // the runs not begun are not failures, but the result is incomplete
		fmt.Fprintf(stdout, "== interrupted after %d of %d runs\n", begun, len(runs))
		worse(report.ExitUnknown)
	}
	fmt.Fprintln(stdout, "== all runs")
	_ = report.Summary(stdout, all)
	return code
}
