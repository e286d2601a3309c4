// Command jepsen runs raftstream's fault-injection tests and checks their
// histories.
//
//	jepsen run   -bin ./raftstream [flags]   start the server, inject faults, check, report
//	jepsen run   -addr host:port [flags]     the same against a running server (link faults only)
//	jepsen run   -addr a1,a2,a3 -docker c1,c2,c3 [-docker-network net] [-dry-run] [flags]
//	                                          a running docker cluster (external driver; see jepsen/external)
//	jepsen run   -profile ci|soak -bin ./raftstream [-seed n] [-time 30m] [-nemesis …] [-workload …]
//	jepsen check [-trims] [-out dir] history.jsonl
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
	"strings"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/external"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/netns"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/runner"
	"github.com/raftstream/raftstream/jepsen/workload"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(report.ExitUnknown)
	}
	var code int
	switch os.Args[1] {
	case "run":
		code = run(os.Args[2:], os.Stdout, os.Stderr)
	case "-profile", "--profile":
		// jepsen --profile ci: run is implied
		code = run(os.Args[1:], os.Stdout, os.Stderr)
		code = run(os.Args[2:], os.Stdout, os.Stderr)
	case "check":
		code = check(os.Args[2:], os.Stdout, os.Stderr)
	default:
		usage(os.Stderr)
		code = report.ExitUnknown
	}
	os.Exit(code)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: jepsen run (-bin path | -addr host:port) [flags]\n       jepsen check [-trims] [-out dir] history.jsonl")
}

// run: 1. parse flags, 2. run the test, 3. print the summary, 4. exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jepsen run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg runner.Config
	var serverArgs, faults string
	fs.StringVar(&cfg.Bin, "bin", "", "server binary to start (raftstream)")
	fs.StringVar(&serverArgs, "args", "", "server arguments; {port} {dir} {bus} {busannounce} {join} {n} {name} are substituted (default: single node, or a cluster when -nodes > 1)")
	fs.IntVar(&cfg.Nodes, "nodes", 1, "nodes to start with -bin")
	fs.StringVar(&cfg.Addr, "addr", "", "use a running server at host:port instead of -bin (a cluster: comma-separated, one per node)")
	var dk external.Docker
	var containers, ips string
	fs.StringVar(&containers, "docker", "", "external driver: comma-separated containers of the -addr nodes, in order; enables kill, pause, leader-pause, partition-one, partition-leader through docker")
	fs.StringVar(&dk.Network, "docker-network", "", "external driver: the cluster network partitions disconnect (e.g. rstest_raftstream, the compose network of deploy/compose-test.sh)")
	fs.StringVar(&ips, "docker-ips", "", "external driver: comma-separated fixed IPs to reconnect containers with")
	fs.BoolVar(&dk.DryRun, "dry-run", false, "external driver: print the docker commands instead of running them")
	fs.StringVar(&cfg.Out, "out", "jepsen-out", "directory for history.jsonl, report.html, node logs")
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
	fs.DurationVar(&cfg.Duration, "time", 20*time.Second, "alias of -duration")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *profile != "" {
		if cfg.Bin == "" && cfg.Addr == "" {
			bin, err := buildServer(cfg.Out)
			if err != nil {
				fmt.Fprintln(stderr, "jepsen: no -bin, and building ./cmd/raftstream failed:", err)
				return report.ExitUnknown
			}
			cfg.Bin = bin
		}
		runs, err := profileRuns(*profile, cfg, set)
		if err != nil {
			fmt.Fprintln(stderr, "jepsen:", err)
			return report.ExitUnknown
		}
		return runAll(ctx, runs, stdout, stderr)
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
	return out.ExitCode()
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
