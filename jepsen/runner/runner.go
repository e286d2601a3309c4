// Package runner runs one fault-injection test end to end: it starts the
// server under test (or uses a running one), puts the fault proxy between
// it and the clients, drives the workload while a nemesis injects faults on
// a schedule, heals, runs the final phase, checks the history and writes
// the report. cmd/jepsen is its command line.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/external"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/netns"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/workload"
)

// Faults the nemesis knows.
const (
	FaultStall     = "stall"     // client link stalls (bytes held, then released)
	FaultDelay     = "delay"     // client link delays every chunk by Config.Delay
	FaultReset     = "reset"     // client connections reset
	FaultBlackhole = "blackhole" // client link drops bytes; those connections reset at heal
	FaultKill      = "kill"      // SIGKILL the server, restart it after the fault window
	FaultPause     = "pause"     // SIGSTOP the server for the fault window, then SIGCONT

	// Cluster-bus faults on the links into one node from all its peers (an
	// asymmetric partition: the node still reaches its peers).
	FaultBusStall     = "bus-stall"
	FaultBusBlackhole = "bus-blackhole"
	FaultBusDelay     = "bus-delay"
	FaultBusReset     = "bus-reset"

	// Partitions of the node-to-node links (bytes dropped both ways).
	FaultPartitionOne    = "partition-one"    // isolate one node
	FaultPartitionLeader = "partition-leader" // isolate the leader of the first stream's shard
	FaultPartitionHalves = "partition-halves" // random halves (seeded)
	FaultPartitionRing   = "partition-ring"   // each node reaches only its ring neighbours (majorities ring; no cut with 3 nodes)
	FaultPartitionBridge = "partition-bridge" // two halves, one node in both
	FaultOneWay          = "oneway"           // connections one node opens to its peers lose every byte; inbound links pass
	FaultLinkDelay       = "link-delay"       // every bus link of one node delayed by Config.Delay, both ways
	// FaultLeaderPause pauses the current leader of the first stream's shard
	// (SIGSTOP) for the window: raftstream has no admin leadership-transfer
	// command, so leadership moves by election.
	FaultLeaderPause = "leader-pause"
	// FaultClockSkew restarts one node (SIGKILL) with its wall clock offset
	// by ±Config.Skew (raftstream --debug-clock-offset), and back at the end.
	FaultClockSkew = "clock-skew"
)

// AllFaults lists every fault, client-link ones first (membership early,
// so that short runs see both its join and its removal).
var AllFaults = []string{FaultStall, FaultDelay, FaultReset, FaultBlackhole, FaultKill, FaultPause,
	FaultMembership, FaultReshard, FaultBusStall, FaultBusBlackhole, FaultBusDelay, FaultBusReset, FaultPartitionOne, FaultPartitionLeader,
	FaultPartitionHalves, FaultPartitionRing, FaultPartitionBridge, FaultOneWay, FaultLinkDelay,
	FaultLeaderPause, FaultClockSkew}

// dockerFaults are the faults the external (docker) driver can inject.
var dockerFaults = []string{FaultKill, FaultPause, FaultPartitionOne, FaultPartitionLeader, FaultLeaderPause}

// DefaultArgs are the raftstream arguments for nodes started by the runner.
func DefaultArgs(nodes int) []string {
	a := "--port {port} --dir {dir} --debug-clock-offset {clock}"
	if nodes > 1 {
		a += " --cluster-port {bus} --cluster-announce-bus {busannounce} --join {join} --bootstrap-expect {n}" +
			" --node-name {name} --host-id {name} --debug-dial-map {dialmap}"
	}
	return strings.Fields(a)
}

// Config is one run. Either Bin (start the server) or Addr (use a running
// one; kill and pause are then unavailable) must be set.
type Config struct {
	Bin  string   // server binary
	Args []string // its arguments; see Nodes for the substitutions
	Addr string   // a running server instead of Bin; comma-separated for a cluster (one address per node)
	// Docker drives kill, pause and partition faults on a running cluster
	// (Addr) made of docker containers, one per address (the external
	// driver). Without it a running cluster only gets client-link faults.
	Docker *external.Docker
	// Netns runs the nodes in the namespaces of a set-up netns.Net (this
	// process must itself run in its ctl namespace: see cmd/jepsen -driver
	// netns); partitions are then nftables rules inside the node
	// namespaces, and the per-link proxy faults (bus-*, oneway, link-delay)
	// are unavailable.
	Netns *netns.Net
	Dir   string // parent of the nodes' data directories; default Out
	// Nodes to start with Bin (default 1). In Args, {port}, {dir}, {bus}
	// (cluster bus listen port), {busannounce} (the address of the proxy
	// peers must dial instead), {join} (every node's {busannounce},
	// comma-separated), {name} (n1…) and {n} (Nodes) are substituted.
	Nodes int

	Out string // directory for history.jsonl, report.html, the porcupine visualizations and n<i>.log

	Clients   int
	Keys      int
	Seed      int64
	OpTimeout time.Duration
	Duration  time.Duration // length of the faulty phase

	Faults     []string      // cycled through in order
	FaultEvery time.Duration // quiet time before each fault
	FaultFor   time.Duration // length of each fault window
	Delay      time.Duration // for FaultDelay, FaultBusDelay, FaultLinkDelay
	Skew       time.Duration // for FaultClockSkew; default 5s

	// Workload is the operation mix (workload.Mix*); default all.
	Workload string
	// InjectBug is passed to every node as --debug-inject-bug (the
	// harness's self-test: the checkers must flag the run).
	InjectBug string

	Checker checker.Options
	Log     *slog.Logger
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	switch {
	case (c.Bin == "") == (c.Addr == ""):
		return errors.New("runner: exactly one of Bin and Addr must be set")
	case c.Out == "":
		return errors.New("runner: Out is required")
	case c.Clients <= 0 || c.Keys <= 0:
		return fmt.Errorf("runner: Clients %d and Keys %d must be positive", c.Clients, c.Keys)
	case c.OpTimeout <= 0 || c.Duration <= 0:
		return fmt.Errorf("runner: OpTimeout %v and Duration %v must be positive", c.OpTimeout, c.Duration)
	}
	for _, f := range c.Faults {
		switch {
		case f == FaultStall || f == FaultDelay || f == FaultReset || f == FaultBlackhole:
		case c.Docker != nil && slices.Contains(dockerFaults, f):
		case f == FaultMembership:
			if c.Bin == "" || c.Nodes < 2 || (c.Netns != nil && c.Netns.Nodes <= c.Nodes) {
				return fmt.Errorf("runner: fault %q needs a cluster the runner starts (Bin, Nodes > 1; with netns, a namespace for the spare node)", f)
			}
		case f == FaultReshard:
			if c.Bin == "" || c.Nodes < 2 {
				return fmt.Errorf("runner: fault %q needs a cluster the runner starts (Bin, Nodes > 1)", f)
			}
		case slices.Contains(AllFaults, f):
			if c.Bin == "" {
				return fmt.Errorf("runner: fault %q needs Bin (a server the runner starts)", f)
			}
		default:
			return fmt.Errorf("runner: unknown fault %q", f)
		}
	}
	if c.Docker != nil {
		if c.Addr == "" {
			return errors.New("runner: Docker needs Addr (the cluster's published addresses)")
		}
		if err := c.Docker.Validate(len(strings.Split(c.Addr, ","))); err != nil {
			return err
		}
	}
	if c.Workload != "" && !slices.Contains(workload.Mixes, c.Workload) {
		return fmt.Errorf("runner: unknown workload %q (want one of %s)", c.Workload, strings.Join(workload.Mixes, ", "))
	}
	if len(c.Faults) > 0 && (c.FaultEvery <= 0 || c.FaultFor <= 0) {
		return fmt.Errorf("runner: FaultEvery %v and FaultFor %v must be positive", c.FaultEvery, c.FaultFor)
	}
	return nil
}

// absPaths makes Out, Dir and a Bin given as a path (not a name looked up
// in PATH) absolute: a node process runs in its own data directory
// (local.Node), where a relative binary would not be found and a relative
// {dir} would nest the data under itself.
func (c *Config) absPaths() (err error) {
	for _, p := range []*string{&c.Out, &c.Dir} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return err
			}
		}
	}
	if strings.ContainsRune(c.Bin, filepath.Separator) {
		c.Bin, err = filepath.Abs(c.Bin)
	}
	return err
}

// Outcome is what a run produced.
type Outcome struct {
	History history.History
	Results []checker.Result
	Report  string // path of report.html
	Err     error  // harness error (the server could not be started or restarted, …)
	// Cut is set when Run's context ended the faulty phase before
	// Config.Duration (a soak's time budget, an interrupt): how long the
	// faulty phase lasted. The heal, final phase and checks ran in full.
	Cut time.Duration
}

// ExitCode is report.ExitCode of the outcome.
func (o *Outcome) ExitCode() int { return report.ExitCode(o.Results, o.Err) }

// Run performs the test. A harness failure after the history began is
// returned in Outcome.Err with whatever could still be checked.
//
// ctx bounds the setup and the faulty phase only. When it ends during the
// faulty phase, that phase stops there (Outcome.Cut) and the heal, the
// final phase and the checks still run, with a context of their own: a
// history cut without its final reads would read as a liveness failure
// (nothing succeeded after the heal) of a server that did nothing wrong.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.absPaths(); err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	// 1. The servers under test, each behind its own client-link proxy.
	sut, err := startNodes(cfg, log)
	if err != nil {
		return nil, err
	}
	defer sut.close()
	// 2. The history.
	w, err := history.Create(filepath.Join(cfg.Out, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("jepsen:{s%d}", i)
		if cfg.Addr != "" {
			// A running cluster keeps the streams of earlier runs, whose
			// entries this history did not write: streams of its own.
			keys[i] = fmt.Sprintf("jepsen:%d:{s%d}", start.UnixNano(), i)
		}
	}
	sut.keys = keys
	wl := workload.New(workload.Config{Keys: keys, Clients: cfg.Clients, Seed: cfg.Seed, Timeout: cfg.OpTimeout,
		Mix: cfg.Workload},
		sut.target, w)
	out := &Outcome{}
	// 3. Setup, retried while the server elects leaders.
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	for err = wl.Setup(setupCtx); err != nil && setupCtx.Err() == nil; err = wl.Setup(setupCtx) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("setup: %w", err)
	}
	// 4. The faulty phase: workload and nemesis side by side.
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	var nemErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		nemErr = nemesis(runCtx, cfg, w, sut, log)
	}()
	faulty := time.Now()
	wl.Run(runCtx, 1<<30)
	stop()
	wg.Wait()
	if ctx.Err() != nil {
		out.Cut = max(time.Since(faulty), time.Nanosecond)
		log.Info("faulty phase cut short; healing and checking the run", "after", out.Cut, "cause", context.Cause(ctx))
	}
	// 5. Heal everything, wait until the servers answer again (outside the
	// history), then the final phase, whether or not ctx has ended (see
	// above).
	nemErr = errors.Join(nemErr, sut.heal())
	w.Nemesis(history.Heal, "")
	// (3 minutes: on a loaded machine the drain of 4 streams holding a
	// 2-minute run's entries took more than one)
	finalCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	nemErr = errors.Join(nemErr, sut.waitReady(finalCtx, keys))
	wl.Final(finalCtx)
	cancel()
	out.Err = nemErr
	if err := w.Close(); err != nil {
		return nil, err
	}
	// 6. Check and report.
	h, err := history.ReadFile(filepath.Join(cfg.Out, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	out.History = h
	out.Results = checker.Run(h, cfg.Checker)
	notes := []string{fmt.Sprintf("%d clients, %d streams, workload %s, op timeout %v, faulty phase %v, faults %s every %v for %v",
		cfg.Clients, cfg.Keys, cfg.Workload, cfg.OpTimeout, cfg.Duration, strings.Join(cfg.Faults, ","), cfg.FaultEvery, cfg.FaultFor)}
	if cfg.Bin != "" {
		notes = append(notes, "server: "+cfg.Bin+" "+strings.Join(cfg.Args, " "))
	}
	if cfg.InjectBug != "" {
		notes = append(notes, "self-test: the servers run with --debug-inject-bug "+cfg.InjectBug)
	}
	if out.Cut > 0 {
		notes = append(notes, fmt.Sprintf("faulty phase cut after %v of %v (%v); healed, final phase and checks in full",
			out.Cut.Round(time.Millisecond), cfg.Duration, context.Cause(ctx)))
	}
	if out.Err != nil {
		notes = append(notes, "harness error: "+out.Err.Error())
	}
	out.Report, err = report.WriteDir(cfg.Out, h, out.Results, report.Meta{Title: "raftstream fault injection",
		Seed: cfg.Seed, Notes: notes})
	if err != nil {
		return out, err
	}
	return out, nil
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
