// Command jepsen runs raftstream's fault-injection tests and checks their
// histories.
//
//	jepsen run   -bin ./raftstream [flags]   start the server, inject faults, check, report
//	jepsen run   -addr host:port [flags]     the same against a running server (link faults only)
//	jepsen run   -addr a1,a2,a3 -docker c1,c2,c3 [-docker-network net] [-dry-run] [flags]
//	                                          a running docker cluster (external driver; see jepsen/external)
//	jepsen run   -profile ci|soak [-bin ./raftstream] [-seed n] [-time 30m] [-nemesis …] [-workload …]
//	jepsen -profile ci|soak …                  the same (run is implied)
//	jepsen check [-trims] [-out dir] history.jsonl
//
// Without -bin or -addr, run builds ./cmd/raftstream itself. Every run
// writes into a new subdirectory of -out (default jepsen-out) named by the
// time, with -out/latest pointing at it.
//
// Both print one line per checker and end with "N passed, N failed". The
// exit code is 0 when every checker passed, 1 when one found an anomaly, 2
// when one could not decide or the harness failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/external"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/netns"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/runner"
	"github.com/raftstream/raftstream/jepsen/workload"
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the subcommand named by args[0] and returns the exit code.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return report.ExitUnknown
	}
	switch a := args[0]; {
	case a == "run":
		return run(args[1:], stdout, stderr)
	case strings.HasPrefix(a, "-") && strings.HasPrefix(strings.TrimLeft(a, "-"), "profile"):
		// jepsen --profile ci: run is implied, and -profile is one of its flags
		return run(args, stdout, stderr)
	case a == "check":
		return check(args[1:], stdout, stderr)
	}
	usage(stderr)
	return report.ExitUnknown
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: jepsen run [-bin path | -addr host:port] [flags]\n       jepsen -profile ci|soak [flags]\n       jepsen check [-trims] [-out dir] history.jsonl")
}

// run: 1. parse flags, 2. run the test, 3. print the summary, 4. exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jepsen run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg runner.Config
	var serverArgs, faults string
	fs.StringVar(&cfg.Bin, "bin", "", "server binary to start (default, without -addr: ./cmd/raftstream built into the run's directory)")
	fs.StringVar(&serverArgs, "args", "", "server arguments; {port} {dir} {bus} {busannounce} {join} {n} {name} are substituted (default: single node, or a cluster when -nodes > 1)")
	fs.IntVar(&cfg.Nodes, "nodes", 1, "nodes to start with -bin")
	fs.StringVar(&cfg.Addr, "addr", "", "use a running server at host:port instead of -bin (a cluster: comma-separated, one per node)")
	var dk external.Docker
	var containers, ips string
	fs.StringVar(&containers, "docker", "", "external driver: comma-separated containers of the -addr nodes, in order; enables kill, pause, leader-pause, partition-one, partition-leader through docker")
	fs.StringVar(&dk.Network, "docker-network", "", "external driver: the cluster network partitions disconnect (e.g. rstest_raftstream, the compose network of deploy/compose-test.sh)")
	fs.StringVar(&ips, "docker-ips", "", "external driver: comma-separated fixed IPs to reconnect containers with")
	fs.BoolVar(&dk.DryRun, "dry-run", false, "external driver: print the docker commands instead of running them")
	fs.StringVar(&cfg.Out, "out", "jepsen-out", "each run writes history.jsonl, report.html, node logs and node data into a new subdirectory of this one named by the time; <out>/latest points at it")
	fs.IntVar(&cfg.Clients, "clients", 8, "concurrent clients")
	fs.IntVar(&cfg.Keys, "keys", 2, "streams")
	fs.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano(), "seed of the clients' operation choice")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", 500*time.Millisecond, "per-operation timeout (then the outcome is unknown)")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "length of the faulty phase")
	fs.StringVar(&faults, "faults", "kill,stall,pause,reset,delay,blackhole", "faults cycled through (alias -nemesis; \"all\" = every fault): "+strings.Join(runner.AllFaults, " ")+" (all but the client-link ones need -bin)")
	fs.StringVar(&faults, "nemesis", "kill,stall,pause,reset,delay,blackhole", "alias of -faults")
	fs.StringVar(&cfg.Workload, "workload", "all", "operation mix: "+strings.Join(workload.Mixes, ", "))
	fs.StringVar(&cfg.InjectBug, "inject-bug", "", "self-test: start the servers with --debug-inject-bug (ack-before-commit, stale-read, drop-pel-update); the checkers must flag the run")
	fs.DurationVar(&cfg.Skew, "skew", 5*time.Second, "clock offset applied by the clock-skew fault")
	fs.DurationVar(&cfg.Duration, "time", 20*time.Second, "alias of -duration; with -profile soak the soak's wall-clock budget, with -profile ci each run's faulty phase")
	driver := fs.String("driver", "local", "how nodes started with -bin are networked: local (127.0.0.1, per-link proxies) or netns (root: a namespace per node, nftables partitions, clients in a ctl namespace)")
	profile := fs.String("profile", "", "preset: ci (every fault and workload on 3 local nodes, under 3 minutes) or soak (every fault, workloads in turn, for -time; default 30m); flags given explicitly override it (-seed replays)")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", 2*time.Second, "quiet time before each fault")
	fs.DurationVar(&cfg.FaultFor, "fault-for", 2*time.Second, "length of each fault")
	fs.DurationVar(&cfg.Delay, "delay", 50*time.Millisecond, "delay added by the delay fault")
	fs.BoolVar(&cfg.Checker.Trims, "trims", false, "the workload trims streams")
	fs.DurationVar(&cfg.Checker.LinearTimeout, "linear-timeout", 30*time.Second, "linearizability search budget per stream")
	if err := fs.Parse(args); err != nil {
		return report.ExitUnknown
	}
	// the namespaces are made for the nodes the run will start (a profile's
	// count unless -nodes is given) and one more for the membership fault's
	// spare node
	nsNodes := cfg.Nodes
	if *profile != "" {
		nsNodes = 3
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "nodes" {
				nsNodes = cfg.Nodes
			}
		})
	}
	switch *driver {
	case "local":
	case "netns":
		return runNetns(args, nsNodes+1, stdout, stderr)
	case netnsInner:
		cfg.Netns = &netns.Net{Prefix: netnsPrefix, Nodes: nsNodes + 1}
	default:
		fmt.Fprintf(stderr, "jepsen: unknown -driver %q\n", *driver)
		return report.ExitUnknown
	}
	if containers != "" {
		dk.Containers = strings.Split(containers, ",")
		if ips != "" {
			dk.IPs = strings.Split(ips, ",")
		}
		dk.Out = stdout
		cfg.Docker = &dk
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if faults == "all" {
		faults = strings.Join(runner.AllFaults, ",")
	}
	cfg.Args = strings.Fields(serverArgs)
	if serverArgs == "" {
		cfg.Args = runner.DefaultArgs(cfg.Nodes)
	}
	if faults != "" {
		cfg.Faults = strings.Split(faults, ",")
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := interruptible(stderr)
	defer stop()
	dir, err := newRunDir(cfg.Out, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "jepsen:", err)
		return report.ExitUnknown
	}
	cfg.Out = dir
	fmt.Fprintf(stdout, "output %s\n", dir)
	if cfg.Bin == "" && cfg.Addr == "" {
		bin, err := buildServer(filepath.Join(dir, "bin"))
		if err != nil {
			fmt.Fprintln(stderr, "jepsen: no -bin, and building ./cmd/raftstream failed:", err)
			return report.ExitUnknown
		}
		cfg.Bin = bin
	}
	if *profile != "" {
		runs, budget, err := profileRuns(*profile, cfg, set)
		if err != nil {
			fmt.Fprintln(stderr, "jepsen:", err)
			return report.ExitUnknown
		}
		return runAll(ctx, runs, budget, stdout, stderr)
	}
	fmt.Fprintf(stdout, "seed %d\n", cfg.Seed)
	out, err := runner.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "jepsen:", err)
		if out == nil {
			return report.ExitUnknown
		}
	}
	if out.Err != nil {
		fmt.Fprintln(stderr, "jepsen: harness:", out.Err)
	}
	fmt.Fprintf(stdout, "%d events; report %s\n", len(out.History), out.Report)
	_ = report.Summary(stdout, out.Results)
	code := out.ExitCode()
	if out.Cut > 0 && code != report.ExitInvalid {
		// checked in full, but not the run that was asked for
		fmt.Fprintf(stdout, "interrupted: the faulty phase lasted %v of %v\n", out.Cut.Round(time.Second), cfg.Duration)
		code = report.ExitUnknown
	}
	return code
}

// interruptible returns a context that the first SIGINT or SIGTERM ends:
// the run under way then stops its faulty phase, heals, runs its final
// phase and is checked, and no further run begins. A second signal ends the
// process at once, after killing (by PID) the servers it started and
// reaping them, so that none is left running; the exit status is the
// shell's for a process the signal ended (128 + its number). stop releases
// the signals.
func interruptible(stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(stderr, "jepsen: %v: healing and checking the run under way (signal again to stop at once)\n", s)
			cancel(fmt.Errorf("interrupted (%v)", s))
		case <-done:
			return
		}
		select {
		case s := <-sig:
			fmt.Fprintf(stderr, "jepsen: %v: stopping at once; killing the servers this run started\n", s)
			local.KillAll(10 * time.Second)
			code := 1
			if n, ok := s.(syscall.Signal); ok {
				code = 128 + int(n)
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(sig)
		cancel(nil)
	}
}

// check: 1. read the history, 2. run the checkers, 3. report, 4. exit code.
func check(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jepsen check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o checker.Options
	fs.BoolVar(&o.Trims, "trims", false, "the workload trimmed streams")
	fs.DurationVar(&o.LinearTimeout, "linear-timeout", 30*time.Second, "linearizability search budget per stream")
	dir := fs.String("out", "", "write report.html (and porcupine visualizations) here")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		usage(stderr)
		return report.ExitUnknown
	}
	h, err := history.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "jepsen:", err)
		return report.ExitUnknown
	}
	rs := checker.Run(h, o)
	if *dir != "" {
		path, err := report.WriteDir(*dir, h, rs, report.Meta{Title: fs.Arg(0)})
		if err != nil {
			fmt.Fprintln(stderr, "jepsen:", err)
			return report.ExitUnknown
		}
		fmt.Fprintf(stdout, "report %s\n", path)
	}
	_ = report.Summary(stdout, rs)
	return report.ExitCode(rs, nil)
}
