package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/runner"
	"github.com/raftstream/raftstream/jepsen/workload"
)

// profileRuns expands a profile into runs. base carries the parsed flags;
// set names the flags given explicitly, which override the profile's
// values (so -seed replays a profile, -nemesis/-workload narrow it).
//
//   - ci: 3 nodes; one run of the mixed workload through every fault, then
//     one run each of the append, group and idempotent mixes through the
//     node, partition and clock faults. About 2.5 minutes.
//   - soak: 3 nodes, 4 streams; every fault, the workloads in turn, runs of
//     2 minutes (the last one shorter) until -time (default 30m) is used up.
func profileRuns(name string, base runner.Config, set map[string]bool) ([]runner.Config, error) {
	if base.Bin == "" {
		return nil, fmt.Errorf("profile %s needs -bin", name)
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
	var runs []runner.Config
	add := func(tag, mix string, faults []string, d, every, dur time.Duration) {
		c := base
		c.Out = filepath.Join(base.Out, tag)
		c.Workload, c.Faults, c.FaultEvery, c.FaultFor, c.Duration = mix, faults, every, d, dur
		c.Seed = base.Seed + int64(len(runs))
		runs = append(runs, c)
	}
	switch name {
	case "ci":
		add("1-all", mix(workload.MixAll), pick(runner.AllFaults), 2*time.Second, 500*time.Millisecond, 50*time.Second)
		short := pick([]string{runner.FaultKill, runner.FaultPartitionLeader, runner.FaultClockSkew, runner.FaultPartitionHalves})
		add("2-append", mix(workload.MixAppend), short, 2*time.Second, 500*time.Millisecond, 10*time.Second)
		add("3-group", mix(workload.MixGroup), short, 2*time.Second, 500*time.Millisecond, 10*time.Second)
		add("4-idempotent", mix(workload.MixIdempotent), short, 2*time.Second, 500*time.Millisecond, 10*time.Second)
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
		for i := 0; time.Duration(i)*per < total; i++ {
			m := workload.Mixes[i%len(workload.Mixes)]
			add(fmt.Sprintf("%d-%s", i+1, m), mix(m), pick(runner.AllFaults), 3*time.Second, 2*time.Second,
				min(per, total-time.Duration(i)*per))
		}
	default:
		return nil, fmt.Errorf("unknown profile %q (want ci or soak)", name)
	}
	return runs, nil
}

// buildServer builds the server (local.BuildServer: run inside the module)
// into out/bin/raftstream, for profiles started without -bin.
func buildServer(out string) (string, error) {
	bin, err := filepath.Abs(filepath.Join(out, "bin", "raftstream"))
	if err != nil {
		return "", err
	}
	if err := local.BuildServer(bin, false); err != nil {
		return "", err
	}
	return bin, nil
}

// runAll performs runs in order, printing each run's summary, then one
// summary of every checker of every run (named run/checker) ending in
// "N passed, N failed". The exit code is the worst of the runs.
func runAll(ctx context.Context, runs []runner.Config, stdout, stderr io.Writer) int {
	var all []checker.Result
	code := report.ExitValid
	for i, c := range runs {
		if ctx.Err() != nil { // interrupted: the runs not begun are not failures
			fmt.Fprintf(stdout, "== interrupted after %d of %d runs\n", i, len(runs))
			code = max(code, report.ExitUnknown)
			break
		}
		tag := filepath.Base(c.Out)
		fmt.Fprintf(stdout, "== run %s: workload %s, faults %s, %v, seed %d\n", tag, c.Workload,
			strings.Join(c.Faults, ","), c.Duration, c.Seed)
		start := time.Now()
		out, err := runner.Run(ctx, c)
		if err != nil {
			fmt.Fprintln(stderr, "jepsen:", err)
		}
		if out == nil {
			all = append(all, checker.Result{Name: tag + "/harness", Valid: checker.Unknown, Notes: []string{fmt.Sprint(err)}})
			code = max(code, report.ExitUnknown)
			continue
		}
		if out.Err != nil {
			fmt.Fprintln(stderr, "jepsen: harness:", out.Err)
		}
		fmt.Fprintf(stdout, "%d events in %v; report %s\n", len(out.History), time.Since(start).Round(time.Second), out.Report)
		_ = report.Summary(stdout, out.Results)
		for _, r := range out.Results {
			r.Name = tag + "/" + r.Name
			all = append(all, r)
		}
		if c := out.ExitCode(); c == report.ExitInvalid || code != report.ExitInvalid && c > code {
			code = c
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintln(stdout, "== all runs")
	_ = report.Summary(stdout, all)
	return code
}
