// Command raftstream is the raftstream server: a Redis Streams broker whose
// every write is replicated through Raft before it is acknowledged.
//
//	raftstream [flags]                     run a node (no flags: single node, all slots, 127.0.0.1:6379)
//	raftstream health --addr host:port     PING a node; exit 0 if it answers PONG (container healthchecks)
//	raftstream status|transfer-leader|snapshot --addr host:port ...   operator commands (admin.go)
//	raftstream import --from host:port [--cluster] [--to host:port] ...   copy streams from Redis (import.go)
//	raftstream backup --addr host:port --out FILE                 consistent copy of every shard (backup.go)
//	raftstream restore --in FILE --to host:port                    write a backup into a new node or cluster (restore.go)
//
// Every flag can also be set through the environment as RAFTSTREAM_<FLAG>,
// upper case with dashes as underscores (RAFTSTREAM_REQUIREPASS=...); a flag
// on the command line wins over the environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp"
	"github.com/raftstream/raftstream/resp/wire"
)

// The node is the RESP server's backend; the interface is resp's, the
// implementation cluster's, and only this command joins them.
var _ resp.Backend = (*cluster.Node)(nil)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "health" {
		os.Exit(health(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "import" {
		os.Exit(importCmd(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "backup" {
		os.Exit(backupCmd(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "restore" {
		os.Exit(restoreCmd(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && adminCommands[os.Args[1]] != nil {
		os.Exit(adminCommands[os.Args[1]](os.Args[2:], os.Stdout, os.Stderr))
	}
	sysmonBackoff() // re-executes with the runtime's monitor backing off (sysmon.go)
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "raftstream:", err)
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	bind, dir, requirepass     string
	port, shards               int
	clusterBind, clusterAdvert string
	clusterPort                int
	join                       string
	bootstrapExpect            int
	replicationFactor          int
	deadAfter                  time.Duration
	gossipAddr                 string
	hostID                     string
	hostCPUs                   int
	announce                   string
	announcePort               int
	nodeName                   string
	forwarding                 bool
	logLevel, logFormat        string
	protoMaxBulkLen            int64
	snapshotInterval           time.Duration
	snapshotThreshold          uint64
	expireInterval             time.Duration
	retentionInterval          time.Duration
	trailingLogs               uint64
	heartbeat, election        time.Duration
	shutdownTimeout            time.Duration
	cpuProfile                 string
	admin                      adminOptions    // admin.go
	sec                        securityOptions // security.go
	gc                         gcOptions       // gcpolicy.go
	slots                      slotOptions     // slots.go
	// Test-only (jepsen/ harness): see the --debug-* flags.
	debugClockOffset time.Duration
	debugInjectBug   string
	debugDialMap     string
	// From the environment only (readEnvSwitches).
	raftLogStore           string
	nodeLogSegmentBytes    int64
	raftBus                bool
	earlyReplication       bool
	gather                 time.Duration
	eventLoop              bool
	loopSyscalls           bool // the event loop without io_uring
	debugLogStoreFaultFile string
}

// Switches read from the environment only, with no flag: experiment and
// test settings (the RAFTSTREAM_<FLAG> variables are read with the flags).
const (
	// logStoreEnv selects the Raft log store of new shard directories:
	// node (default), bolt or wal (cluster.Config.LogStore).
	logStoreEnv = "RAFTSTREAM_RAFT_LOG_STORE"
	// nodeLogSegmentEnv, a positive byte count, sets the node log's segment
	// size (cluster.Config.NodeLogSegmentBytes): fault-injection runs use
	// small segments so rotation and deletion happen within minutes.
	nodeLogSegmentEnv = "RAFTSTREAM_NODE_LOG_SEGMENT_BYTES"
	// logStoreFaultEnv is TEST ONLY (the fsync-error test): while a file
	// exists at this path every Raft log write fails with an fsync error
	// (cluster.Config.LogStoreFaultFile). Never set in production.
	logStoreFaultEnv = "RAFTSTREAM_DEBUG_LOG_STORE_FAULT_FILE"
	// raftBusEnv "off" sends each shard group's AppendEntries over the
	// group's own transport instead of the raft bus the groups share
	// (cluster.Config.RaftBus; on by default): for comparing the two.
	raftBusEnv = "RAFTSTREAM_RAFT_BUS"
	// earlyReplicationEnv "off" makes a shard's leader send its new
	// entries to followers only after its own log write (raft's order)
	// instead of during it (cluster.Config.EarlyReplication; on by
	// default, with the raft bus): for comparing the two.
	earlyReplicationEnv = "RAFTSTREAM_EARLY_REPLICATION"
	// gatherEnv, a duration, bounds how long a shard's batcher waits for
	// the clients its last entry answered (cluster.Config.MaxGather; fsm's
	// MaxGather, 4 ms by default); 0 turns the gather off: for comparing.
	gatherEnv = "RAFTSTREAM_GATHER"
	// eventLoopEnv: "on" serves plain TCP connections that send only
	// writes from one event loop (resp.Config.EventLoop), "off" gives every
	// connection its goroutine; unset, a node started alone (no --join,
	// --bootstrap-expect at most 1) runs the loop. Never with --forwarding.
	// The loop's round is the batch, so it also turns the shards' gather
	// off unless RAFTSTREAM_GATHER sets it.
	eventLoopEnv = "RAFTSTREAM_EVENT_LOOP"
	// ioURingEnv "off" makes the event loop read and write each connection
	// with system calls of its own instead of one io_uring call per
	// round's reads and one per its writes (resp.Config.EventLoopSyscalls;
	// on by default where the kernel allows io_uring): for comparing.
	ioURingEnv = "RAFTSTREAM_IO_URING"
)

// onUnlessOff reads the on/off switch in the environment variable name:
// on when unset, empty or "on", off when "off", an error otherwise.
func onUnlessOff(name string) (bool, error) {
	switch v := os.Getenv(name); v {
	case "", "on":
		return true, nil
	case "off":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: want on or off", name, v)
	}
}

// readEnvSwitches fills o's environment-only settings; an empty variable is
// unset.
func readEnvSwitches(o *options) error {
	o.raftLogStore = os.Getenv(logStoreEnv)
	o.debugLogStoreFaultFile = os.Getenv(logStoreFaultEnv)
	var err error
	if o.raftBus, err = onUnlessOff(raftBusEnv); err != nil {
		return err
	}
	if o.earlyReplication, err = onUnlessOff(earlyReplicationEnv); err != nil {
		return err
	}
	if v := os.Getenv(nodeLogSegmentEnv); v != "" {
		b, err := strconv.ParseInt(v, 10, 64)
		if err != nil || b <= 0 {
			return fmt.Errorf("%s=%q is not a positive byte count", nodeLogSegmentEnv, v)
		}
		o.nodeLogSegmentBytes = b
	}
	if v := os.Getenv(gatherEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%s=%q is not a duration of 0 or more", gatherEnv, v)
		}
		o.gather = d
		if d == 0 {
			o.gather = -1 // off
		}
	}
	// The event loop never waits on a client, and a forwarded command
	// waits on another node: with --forwarding every connection keeps its
	// goroutine.
	switch v := os.Getenv(eventLoopEnv); v {
	case "":
		o.eventLoop = o.bootstrapExpect <= 1 && o.join == "" && !o.forwarding
	case "on":
		o.eventLoop = !o.forwarding
	case "off":
		o.eventLoop = false
	default:
		return fmt.Errorf("%s=%q: want on or off", eventLoopEnv, v)
	}
	if o.eventLoop && o.gather == 0 {
		o.gather = -1 // the loop's round is the batch
	}
	ring, err := onUnlessOff(ioURingEnv)
	if err != nil {
		return err
	}
	o.loopSyscalls = !ring
	return nil
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("raftstream", flag.ContinueOnError)
	fs.StringVar(&o.bind, "bind", "127.0.0.1", "address the RESP server listens on")
	fs.IntVar(&o.port, "port", 6379, "RESP port")
	fs.StringVar(&o.dir, "dir", "./raftstream-data", "data directory (node identity, Raft logs and snapshots)")
	fs.StringVar(&o.requirepass, "requirepass", "", "password clients must send with AUTH or HELLO AUTH (Redis's requirepass)")
	fs.IntVar(&o.shards, "shards", 0, "number of shards (Raft groups) of a NEW cluster; 0 = 1 for a single node, and for a cluster one per node, fewer for nodes that share a host of few CPUs (--host-cpus)")
	fs.IntVar(&o.clusterPort, "cluster-port", 0, "cluster bus port shared by all Raft groups; 0 = port+10000")
	fs.StringVar(&o.clusterBind, "cluster-bind", "", "cluster bus listen host; default --bind")
	fs.StringVar(&o.clusterAdvert, "cluster-announce-bus", "", "cluster bus host:port other nodes dial; default the bus listen address")
	fs.StringVar(&o.join, "join", "", "comma-separated cluster bus addresses (host:port) of nodes to form or join a cluster with")
	fs.IntVar(&o.bootstrapExpect, "bootstrap-expect", 1, "number of nodes forming the initial cluster")
	fs.IntVar(&o.replicationFactor, "replication-factor", 3, "replicas (Raft voters) per shard, capped at the number of nodes")
	fs.StringVar(&o.hostID, "host-id", "", "the machine this node runs on, as gossip tells the cluster's other nodes: nodes with the same host ID share its CPUs (GOMAXPROCS = CPUs / co-located nodes, unless GOMAXPROCS is set); empty = the kernel's boot ID, which a host's containers share; none = count this node alone")
	fs.IntVar(&o.hostCPUs, "host-cpus", 0, "the CPUs this node counts as its host's: a cluster formed without --shards or --shards-per-node gives the nodes of one host one shard per 2 of them (at least one, at most one per node); 0 = the CPUs the Go runtime may use at start (GOMAXPROCS, a container's CPU limit)")
	fs.StringVar(&o.gossipAddr, "gossip-addr", "", "where memberlist gossip (failure detection and node metadata) runs: empty = the cluster bus port (TCP through the bus, UDP on the same port number); IP:port = a port of its own (TCP and UDP); off = no gossip (every node polls every node)")
	fs.DurationVar(&o.deadAfter, "dead-after", 30*time.Second, "how long a node may be unreachable before its replicas are moved to other nodes (negative = never)")
	fs.StringVar(&o.announce, "announce", "", "host announced to clients in MOVED and CLUSTER replies; default --bind")
	fs.IntVar(&o.announcePort, "announce-port", 0, "port announced to clients; default --port")
	fs.StringVar(&o.nodeName, "node-name", "", "human-readable node name for logs")
	fs.BoolVar(&o.forwarding, "forwarding", false, "forward commands for shards led elsewhere instead of replying MOVED (for clients that are not cluster-aware)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.Int64Var(&o.protoMaxBulkLen, "proto-max-bulk-len", 512<<20, "largest accepted argument in bytes")
	fs.DurationVar(&o.snapshotInterval, "snapshot-interval", 10*time.Second, "how often the node considers snapshotting a shard")
	fs.Uint64Var(&o.snapshotThreshold, "snapshot-threshold", 8192, "log entries since the last snapshot that trigger a new one")
	fs.DurationVar(&o.expireInterval, "expire-interval", 100*time.Millisecond, "how often a shard leader removes expired keys through the log (negative = never; they stay absent to every command)")
	fs.DurationVar(&o.retentionInterval, "retention-interval", 250*time.Millisecond, "how often a shard leader trims the streams its retention policies govern (negative = never)")
	fs.Uint64Var(&o.trailingLogs, "trailing-logs", 1024, "log entries kept after a snapshot")
	rd := fsm.DefaultConfig()
	fs.DurationVar(&o.heartbeat, "raft-heartbeat-timeout", 0, fmt.Sprintf("Raft heartbeat timeout; also the leader lease when set (0 = the shard default: %v, lease %v)", rd.HeartbeatTimeout, rd.LeaderLeaseTimeout))
	fs.DurationVar(&o.election, "raft-election-timeout", 0, fmt.Sprintf("Raft election timeout (0 = the shard default: %v)", rd.ElectionTimeout))
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long SIGTERM waits for in-flight commands")
	registerAdminFlags(fs, &o.admin)
	registerSecurityFlags(fs, &o.sec)
	registerGCFlags(fs, &o.gc)
	registerSlotFlags(fs, &o.slots)
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (diagnostics)")
	fs.DurationVar(&o.debugClockOffset, "debug-clock-offset", 0, "TEST ONLY (fault-injection harness): offset this node's wall clock as stamped into log entries (clock skew)")
	fs.StringVar(&o.debugInjectBug, "debug-inject-bug", "", "TEST ONLY (fault-injection harness self-test): inject a known bug: ack-before-commit, stale-read or drop-pel-update")
	fs.StringVar(&o.debugDialMap, "debug-dial-map", "", "TEST ONLY (fault-injection harness): comma-separated from=to bus address rewrites applied when this node dials a peer")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: raftstream [flags]\n       raftstream health --addr host:port\n       raftstream import --from host:port [--to host:port] ... (raftstream import -h)\n       raftstream backup --addr host:port --out FILE (raftstream backup -h)\n       raftstream restore --in FILE --to host:port (raftstream restore -h)\n\n")
		fmt.Fprintf(out, "Every flag may also be set as an environment variable RAFTSTREAM_<FLAG> (e.g. RAFTSTREAM_PORT=7000).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := "RAFTSTREAM_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%s=%q: %v", env, v, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := fsm.ValidDebugBug(o.debugInjectBug); err != nil {
		return nil, fmt.Errorf("--debug-inject-bug: %w", err)
	}
	if err := readEnvSwitches(o); err != nil {
		return nil, err
	}
	if err := checkSlotOptions(o.slots); err != nil {
		return nil, err
	}
	if o.hostCPUs < 0 {
		return nil, fmt.Errorf("--host-cpus %d: want 0 or more", o.hostCPUs)
	}
	return o, nil
}

// run is the server's story.
func run(args []string) error {
	// 1. Read the command line (and RAFTSTREAM_* environment).
	o, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}

	// 2. Make the logger every component receives.
	logLevel := new(slog.LevelVar)
	log, err := newLogger(o.logLevel, o.logFormat, os.Stderr, logLevel)
	if err != nil {
		return err
	}
	// The Go heap's growth past the live data (gcpolicy.go).
	defer startGCPolicy(o.gc, log)()

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	if err := checkProtectedMode(o.bind, o.requirepass, &o.sec); err != nil {
		return err
	}

	if err := verifyDataDir(o.dir); err != nil {
		return err
	}

	// 3. Describe the node: data dir, bus address, cluster membership.
	ccfg := clusterConfig(o, log)
	if ccfg.BusTLS, err = busTLS(&o.sec); err != nil {
		return err
	}
	if ccfg.GossipKey, err = gossipKey(&o.sec); err != nil {
		return err
	}
	// A shard the policy adds takes the retention policies of the others,
	// as RAFTSTREAM SHARD ADD gives them (the server exists only later).
	var served atomic.Pointer[resp.Server]
	ccfg.ShardAdded = func(shard int) error {
		if srv := served.Load(); srv != nil {
			return srv.SeedShard(shard)
		}
		return errors.New("not serving clients yet")
	}

	// 4. Open the node and start its Raft groups (bootstrapping a new
	//    cluster, or rejoining with the state found in --dir).
	node, err := cluster.Open(ccfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := node.Start(ctx); err != nil {
		_ = node.Close()
		return err
	}
	// /healthz and /readyz answer from here on (--admin-addr); the RESP
	// server joins /readyz and /metrics once it is stored in serving.
	var serving atomic.Pointer[resp.Server]
	if err := startAdmin(ctx, o.admin, node, &serving, log); err != nil {
		_ = node.Close()
		return err
	}

	// 5. Wait (bounded) for every shard to have a leader, so that the first
	//    clients are not told to retry.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	if err := node.WaitLeaders(wctx); err != nil {
		log.Warn("serving before every shard has a leader", "err", err)
	}
	wcancel()

	// 6. Listen for clients and serve RESP.
	ln, err := listenClients(o.bind, o.port, &o.sec)
	if err != nil {
		_ = node.Close()
		return err
	}
	rcfg := resp.DefaultConfig()
	rcfg.RequirePass = o.requirepass
	rcfg.ProtoMaxBulkLen = o.protoMaxBulkLen
	rcfg.ClusterMode = (o.bootstrapExpect > 1 || o.join != "") && !o.forwarding
	rcfg.Forwarding = o.forwarding
	rcfg.Logger = log
	rcfg.LogLevel = logLevel
	rcfg.GoDebug = os.Getenv("GODEBUG") // with the monitor setting (sysmon.go)
	rcfg.Port, rcfg.Bind, rcfg.Dir = o.port, o.bind, o.dir
	rcfg.EventLoop = o.eventLoop
	rcfg.EventLoopSyscalls = o.loopSyscalls
	srv := resp.New(node, rcfg)
	served.Store(srv)
	if err := applySecurity(srv, &o.sec); err != nil {
		_ = ln.Close()
		_ = node.Close()
		return err
	}
	serving.Store(srv)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("raftstream ready", "addr", ln.Addr().String(), "dir", o.dir, "node", node.ID(),
		"shards", node.NumShards(), "bus", node.BusAddr())

	// 7. Run until SIGINT/SIGTERM (or the listener fails).
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-serveErr:
		log.Error("RESP server stopped", "err", err)
	}

	// 8. Shut down cleanly: stop accepting, let in-flight commands finish,
	//    then close the node (Raft groups, logs, bus).
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		log.Warn("in-flight commands did not finish", "err", serr)
	}
	if cerr := node.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// clusterConfig maps the options onto cluster.Config.
func clusterConfig(o *options, log *slog.Logger) cluster.Config {
	c := cluster.DefaultConfig()
	c.Dir = o.dir
	c.NodeName = o.nodeName
	c.AnnounceHost = o.announce
	if c.AnnounceHost == "" {
		c.AnnounceHost = o.bind
		if ip := net.ParseIP(o.bind); ip != nil && ip.IsUnspecified() {
			c.AnnounceHost = "127.0.0.1"
		}
	}
	c.AnnouncePort = o.announcePort
	if c.AnnouncePort == 0 {
		c.AnnouncePort = o.port
	}
	busPort := o.clusterPort
	if busPort == 0 {
		busPort = o.port + 10000
	}
	busHost := o.clusterBind
	if busHost == "" {
		busHost = o.bind
	}
	c.BindAddr = net.JoinHostPort(busHost, strconv.Itoa(busPort))
	c.AdvertiseBus = o.clusterAdvert
	if c.AdvertiseBus == "" {
		if ip := net.ParseIP(busHost); ip != nil && ip.IsUnspecified() {
			c.AdvertiseBus = net.JoinHostPort(c.AnnounceHost, strconv.Itoa(busPort))
		}
	}
	c.Shards = o.shards
	if o.join != "" {
		for _, j := range strings.Split(o.join, ",") {
			if j = strings.TrimSpace(j); j != "" {
				c.Join = append(c.Join, j)
			}
		}
	}
	c.BootstrapExpect = o.bootstrapExpect
	c.ReplicationFactor = o.replicationFactor
	c.DeadAfter = o.deadAfter
	c.GossipAddr = o.gossipAddr
	c.HostID = hostID(o.hostID)
	c.HostCPUs = o.hostCPUs
	if c.HostCPUs == 0 {
		c.HostCPUs = runtime.GOMAXPROCS(0) // before the CPU share changes it
	}
	if share := newCPUShare(log); share != nil {
		c.OnCoLocated = share.setCoLocated
		c.OnHosted = share.setHosted
	}
	c.Forwarding = o.forwarding
	c.Logger = log
	c.SnapshotInterval = o.snapshotInterval
	c.SnapshotThreshold = o.snapshotThreshold
	c.ExpireInterval = o.expireInterval
	c.RetentionInterval = o.retentionInterval
	c.TrailingLogs = o.trailingLogs
	applySlotOptions(&c, o.slots)
	c.LogStore = o.raftLogStore
	c.NodeLogSegmentBytes = o.nodeLogSegmentBytes
	c.RaftBus = o.raftBus
	c.EarlyReplication = o.earlyReplication
	c.MaxGather = o.gather
	if off := o.debugClockOffset; off != 0 {
		c.Now = func() time.Time { return time.Now().Add(off) }
	}
	c.InjectBug = o.debugInjectBug
	c.LogStoreFaultFile = o.debugLogStoreFaultFile
	for _, kv := range strings.Split(o.debugDialMap, ",") {
		if from, to, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			if c.DebugDialMap == nil {
				c.DebugDialMap = map[string]string{}
			}
			c.DebugDialMap[from] = to
		}
	}
	c.HeartbeatTimeout = o.heartbeat
	c.ElectionTimeout = o.election
	if o.heartbeat > 0 {
		c.LeaderLeaseTimeout = o.heartbeat
	}
	return c
}

// newLogger makes the node's logger; its level is lv, which CONFIG SET
// loglevel changes at run time.
func newLogger(level, format string, w io.Writer, lv *slog.LevelVar) (*slog.Logger, error) {
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %v", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// health PINGs a node: exit status 0 when it answers +PONG, 1 otherwise.
func health(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftstream health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "node RESP address host:port")
	pass := fs.String("requirepass", os.Getenv("RAFTSTREAM_REQUIREPASS"), "password, if the node requires one")
	timeout := fs.Duration("timeout", 3*time.Second, "overall timeout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	deadline := time.Now().Add(*timeout)
	c, err := wire.Dial(*addr, *pass, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "unhealthy:", err)
		return 1
	}
	defer c.Close()
	c.SetDeadline(deadline)
	got, err := c.Do("PING")
	if err != nil {
		fmt.Fprintln(stderr, "unhealthy:", err)
		return 1
	}
	if string(got) == "+PONG\r\n" {
		fmt.Fprintln(stdout, "PONG")
		return 0
	}
	fmt.Fprintf(stderr, "unhealthy: %q\n", got)
	return 1
}
