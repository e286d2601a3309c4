package cluster

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/slots"
)

// Config configures a Node. Only cmd/ reads flags and environment; it fills a
// Config starting from DefaultConfig and calls Open (which calls Validate).
type Config struct {
	// Dir is the node's data directory. It holds node.json (the node ID and
	// the cluster's shard count, written once when the directory is created)
	// and shards/<n>/ (one Raft group per shard hosted here). Required.
	Dir string

	// NodeName is a human-readable name used in logs only. The node's
	// identity is its ID: 40 hex chars generated when Dir is first created,
	// persisted in Dir/node.json and never reused (a wiped disk comes back
	// as a new node). Empty means "use the first 8 chars of the ID".
	NodeName string

	// BindAddr is the cluster bus address (host:port) on which every Raft
	// group of this node, the controller group and the join RPC share one
	// TCP listener. Empty means 127.0.0.1:<AnnouncePort+10000>, like Redis
	// Cluster's bus port.
	BindAddr string
	// AdvertiseBus is the cluster bus address other nodes dial. Empty means
	// BindAddr (which must then not be a wildcard address). Port 0 means
	// the port actually bound (BindAddr with port 0, in tests).
	AdvertiseBus string

	// AnnounceHost and AnnouncePort are the RESP address announced to
	// clients in MOVED replies and CLUSTER SLOTS/SHARDS/NODES.
	AnnounceHost string
	AnnouncePort int

	// Shards is the number of shards (Raft groups) of a new cluster; slots
	// are split into that many contiguous ranges. It is persisted;
	// reopening a data dir with a different non-zero value is an error. 0
	// means automatic: 1 for a single node started without Join and
	// BootstrapExpect <= 1 (behaves like a standalone Redis, MULTI across
	// any keys works), ShardsPerNode × BootstrapExpect for a cluster formed
	// with BootstrapExpect, the cluster's own for a node that joins one; on
	// reopen 0 means "whatever was persisted". Shards are added and retired
	// later (RAFTSTREAM SHARD, the shard policy).
	Shards int

	// ShardsPerNode is K of the shard policy of a new cluster (policy.go):
	// the shards per member it keeps as nodes join and leave. 0 means
	// Shards / BootstrapExpect when Shards is given, else 1.
	ShardsPerNode float64
	// ShardPolicyOff forms a new cluster with the shard policy off: shards
	// are then added, retired and given slots only by an operator.
	ShardPolicyOff bool
	// ShardAdded, when set, is called on the controller leader after the
	// shard policy added shard and it has a leader, to give it the
	// settings the other shards carry (retention policies).
	ShardAdded func(shard int) error

	// Join lists cluster bus addresses (host:port) of other nodes to form or
	// join a cluster with. Empty with BootstrapExpect <= 1 means a
	// single-node cluster bootstrapped on first start.
	Join []string
	// BootstrapExpect is the number of nodes that form the initial cluster:
	// the first start waits until that many nodes (itself included) have
	// discovered each other through Join, then every node bootstraps the
	// same groups from the same sorted node set. 1 (default) = single node.
	BootstrapExpect int
	// ReplicationFactor is the number of replicas (voters) per shard, capped
	// at the number of nodes. Default 3.
	ReplicationFactor int

	// Forwarding makes the RESP server forward commands for shards led
	// elsewhere instead of replying MOVED, for clients that are not
	// cluster-aware. Node itself only carries the flag.
	Forwarding bool

	// Engine configures each shard's engine (stream-node-max-*).
	Engine engine.Config

	// Logger receives node, transport and Raft logs. Nil means discard.
	Logger *slog.Logger

	// Raft timing. Zero values take the shard defaults of
	// fsm.DefaultConfig (500ms, 500ms, 250ms); tests shorten them to make
	// elections fast on loopback.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration

	// SnapshotInterval is how often the node-level snapshot scheduler looks
	// at its shards; it snapshots at most one shard per tick, the one with
	// the most log entries since its last snapshot, if that exceeds
	// SnapshotThreshold. Default 10s and 8192 entries.
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	// StuckTransferAfter, when positive, replaces fsm.StuckTransferAfter:
	// how long a shard's leadership transfer may look stuck in raft before
	// the replica is restarted (tests).
	StuckTransferAfter time.Duration
	// LogStore is fsm.Config.LogStore for every shard replica opened here:
	// "" keeps the kind a shard directory has and gives new ones the node
	// log (fsm.DefaultLogStore); fsm.LogStoreBolt or fsm.LogStoreWAL give
	// new ones a store of their own.
	LogStore string
	// NodeLogSegmentBytes is the size of the node log's segment files
	// (nodelog.Options.SegmentBytes); 0 means nodelog.DefaultSegmentBytes.
	// Small segments make rotation, carrying quiet shards forward and
	// deletion happen within minutes (fault-injection runs).
	NodeLogSegmentBytes int64

	// TrailingLogs is the number of log entries kept after a snapshot so a
	// slightly lagging follower catches up from the log. Default 1024
	// (entries are batches, so raft's 10240 is far too many).
	TrailingLogs uint64

	// BalanceInterval is how often this node hands one shard it leads but
	// does not prefer to the shard's preferred replica (see balance.go).
	// 0 means the default (2s); negative disables balancing.
	BalanceInterval time.Duration

	// ExpireInterval is how often the node's active expiry cycle proposes
	// the deletion of expired keys on the shards it leads (ageout.go).
	// 0 means the default (100ms, Redis's hz 10); negative disables it
	// (expired keys are still absent to every command, but stay in memory
	// until written over or deleted).
	ExpireInterval time.Duration
	// RetentionInterval is how often the retention cycle trims, through
	// the log, the streams of the shards this node leads that a retention
	// policy governs (ageout.go). 0 means the default (250ms); negative
	// disables it.
	RetentionInterval time.Duration

	// DeadAfter is how long a member may stay unreachable before the
	// controller leader moves its replicas to other nodes (it stays a
	// member and gets replicas back by rebalancing once it answers again).
	// Long enough that a restart or a short partition moves nothing.
	// Default 30s; negative disables.
	DeadAfter time.Duration

	// GossipAddr says where this node's memberlist gossip runs: the
	// cluster's failure detector and metadata channel (gossip.go; never
	// used for safety). Empty (the default) puts it on the cluster bus
	// port: streams through the bus listener, datagrams on UDP with the
	// same port number. An IP:port runs it on a port of its own (TCP and
	// UDP). GossipOff ("off") turns it off: every node then polls every
	// member (N² requests). Every node of a cluster uses the same rule.
	// GossipLabel keeps clusters sharing a network apart (default
	// "raftstream").
	GossipAddr  string
	GossipLabel string
	// GossipKey, when set (16, 24 or 32 bytes), encrypts and authenticates
	// all gossip (memberlist's SecretKey): nodes without the key are not
	// heard (cluster/tls.go's BusTLS covers the bus).
	GossipKey []byte

	// HostID names the machine this node runs on (cmd/raftstream: the
	// kernel's boot ID, which every container of a host shares). Gossip
	// carries a hash of it, and CoLocated counts the members that share
	// it. Empty: this node counts itself alone.
	HostID string
	// HostCPUs is how many CPUs this node counts as its host's (the
	// raftstream command: --host-cpus, else the CPUs the Go runtime may
	// use when the process starts). A new cluster's default shard policy
	// fits the shard count to the hosts with it (policy.go, hostUnits);
	// 0: unknown, the node counts as a host of its own.
	HostCPUs int
	// OnCoLocated, when set, is called from the gossip loop with
	// CoLocated's new value each time it changes (the process can then
	// size itself to its share of the host's CPUs).
	OnCoLocated func(n int)
	// OnHosted, when set, is called with the number of shard replicas
	// this node hosts each time it changes (the process can then size
	// itself to the shards it runs). Called with the node's state lock
	// held: it must not call back into the Node.
	OnHosted func(n int)

	// DialTimeout bounds cluster-bus dials and the preamble read of an
	// accepted connection. Default 5s.
	DialTimeout time.Duration
	// RaftBus sends every shard group's AppendEntries over the raft bus
	// shared by all groups (raftbus.go) instead of each group's own
	// NetworkTransport. The raftstream command turns it on unless
	// RAFTSTREAM_RAFT_BUS=off: with one entry in flight per shard it costs
	// a 3-node cluster less CPU per write at pipeline depth 1 and the same
	// at 16 (SETS="redis:3x2 raftstream:3x3 raftstream:3x3:RAFTSTREAM_RAFT_BUS=off"
	// cmd/ordersbench/redis-cluster.sh measures both). A node accepts the bus
	// either way.
	RaftBus bool
	// EarlyReplication (with RaftBus) has a shard's leader send its new
	// entries to caught-up followers while it writes them to its own log,
	// rather than after (early.go): a write then waits for the slower of
	// the two disk writes, not their sum. The raftstream command turns it
	// on unless RAFTSTREAM_EARLY_REPLICATION=off.
	EarlyReplication bool
	// MaxGather bounds how long a shard's batcher waits for the clients its
	// last entry answered before it forms the next entry (fsm's
	// Config.MaxGather). 0 keeps fsm's default; negative turns it off. The
	// raftstream command sets it from RAFTSTREAM_GATHER.
	MaxGather time.Duration

	// KeysOf returns the positions of a command's keys in argv: what each
	// shard's FSM checks commands against while it moves slots
	// (fsm.Config.KeysOf). cmd wires resp's command table; nil means this
	// node's shards cannot be the source of a slot move.
	KeysOf func(argv [][]byte) []int
	// MigrateRate bounds the bytes per second this node copies to other
	// shards for slot moves, over all the moves it drives, so that moves
	// do not starve client traffic. Default DefaultMigrateRate (16 MiB/s);
	// negative means unlimited.
	MigrateRate int64
	// MigrateChunk is the most key bytes one log entry of a move carries
	// (a larger key is sent in chunks of this size). Default
	// DefaultMigrateChunk (256 KiB).
	MigrateChunk int

	// Test-only hooks for the jepsen/ fault-injection harness (flags
	// --debug-*); production leaves them zero.
	//
	// Now is the clock stamped into proposed entries (clock skew); nil means
	// time.Now. InjectBug is fsm.Config.InjectBug. DebugDialMap rewrites
	// the bus address this node dials (key) to another (value), so each
	// directed node-to-node link can go through its own fault proxy.
	// LogStoreFaultFile is fsm.Config.LogStoreFaultFile (the fsync-error
	// test).
	Now               func() time.Time
	InjectBug         string
	DebugDialMap      map[string]string
	LogStoreFaultFile string
	// BusTLS, when set, makes the cluster bus mutual TLS (cluster/tls.go).
	BusTLS *BusTLS
}

// DefaultConfig returns the configuration of `raftstream` started with no
// flags: a single node on 127.0.0.1:6379 (bus 16379), shard count automatic.
func DefaultConfig() Config {
	return Config{
		AnnounceHost:      "127.0.0.1",
		AnnouncePort:      6379,
		BootstrapExpect:   1,
		ReplicationFactor: 3,
		Engine:            engine.DefaultConfig(),
		SnapshotInterval:  10 * time.Second,
		SnapshotThreshold: 8192,
		TrailingLogs:      1024,
		BalanceInterval:   2 * time.Second,
		DialTimeout:       5 * time.Second,
		DeadAfter:         30 * time.Second,
		ExpireInterval:    100 * time.Millisecond,
		RetentionInterval: 250 * time.Millisecond,
	}
}

// Validate checks c and fills derived defaults (BindAddr, AdvertiseBus,
// zero durations). Errors name the field and its value.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return fmt.Errorf("cluster: Dir is required")
	}
	if c.AnnounceHost == "" {
		return fmt.Errorf("cluster: AnnounceHost is required")
	}
	if c.AnnouncePort <= 0 || c.AnnouncePort > 65535 {
		return fmt.Errorf("cluster: AnnouncePort %d out of range 1..65535", c.AnnouncePort)
	}
	if c.BindAddr == "" {
		if c.AnnouncePort+10000 > 65535 {
			return fmt.Errorf("cluster: BindAddr empty and AnnouncePort %d + 10000 is not a port", c.AnnouncePort)
		}
		c.BindAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(c.AnnouncePort+10000))
	}
	if _, _, err := net.SplitHostPort(c.BindAddr); err != nil {
		return fmt.Errorf("cluster: BindAddr %q: %v", c.BindAddr, err)
	}
	if c.AdvertiseBus == "" {
		c.AdvertiseBus = c.BindAddr
	}
	host, port, err := net.SplitHostPort(c.AdvertiseBus)
	if err != nil {
		return fmt.Errorf("cluster: AdvertiseBus %q: %v", c.AdvertiseBus, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("cluster: AdvertiseBus %q is not dialable (set AdvertiseBus when BindAddr is a wildcard)", c.AdvertiseBus)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("cluster: AdvertiseBus %q has a bad port", c.AdvertiseBus)
	}
	if c.Shards < 0 || c.Shards > slots.Count {
		return fmt.Errorf("cluster: Shards %d out of range 0..%d", c.Shards, slots.Count)
	}
	if c.ShardsPerNode < 0 || c.ShardsPerNode > 64 || math.IsNaN(c.ShardsPerNode) {
		return fmt.Errorf("cluster: ShardsPerNode %v out of range 0..64", c.ShardsPerNode)
	}
	if c.HostCPUs < 0 {
		return fmt.Errorf("cluster: HostCPUs %d is negative", c.HostCPUs)
	}
	if c.BootstrapExpect < 0 {
		return fmt.Errorf("cluster: BootstrapExpect %d is negative", c.BootstrapExpect)
	}
	if c.BootstrapExpect == 0 {
		c.BootstrapExpect = 1
	}
	if c.BootstrapExpect > 1 && len(c.Join) == 0 {
		return fmt.Errorf("cluster: BootstrapExpect %d needs Join addresses", c.BootstrapExpect)
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			return fmt.Errorf("cluster: Join address %q: %v", j, err)
		}
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 3
	}
	if c.ReplicationFactor < 1 {
		return fmt.Errorf("cluster: ReplicationFactor %d must be >= 1", c.ReplicationFactor)
	}
	if c.SnapshotInterval <= 0 {
		c.SnapshotInterval = 10 * time.Second
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.NodeLogSegmentBytes < 0 {
		return fmt.Errorf("cluster: NodeLogSegmentBytes %d < 0", c.NodeLogSegmentBytes)
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 1024
	}
	if c.BalanceInterval == 0 {
		c.BalanceInterval = 2 * time.Second
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.MigrateRate == 0 {
		c.MigrateRate = DefaultMigrateRate
	}
	if c.MigrateChunk == 0 {
		c.MigrateChunk = DefaultMigrateChunk
	}
	if c.MigrateChunk < 1024 || c.MigrateChunk > 64<<20 {
		return fmt.Errorf("cluster: MigrateChunk %d out of range 1024..%d", c.MigrateChunk, 64<<20)
	}
	if c.GossipAddr != "" && c.GossipAddr != GossipOff {
		h, _, err := net.SplitHostPort(c.GossipAddr)
		if ip := net.ParseIP(h); err != nil || ip == nil || ip.IsUnspecified() {
			return fmt.Errorf("cluster: GossipAddr %q must be a dialable IP:port, empty (the bus port) or %q", c.GossipAddr, GossipOff)
		}
	}
	if c.GossipLabel == "" {
		c.GossipLabel = "raftstream"
	}
	if c.DeadAfter == 0 {
		c.DeadAfter = 30 * time.Second
	}
	if c.ExpireInterval == 0 {
		c.ExpireInterval = 100 * time.Millisecond
	}
	if c.RetentionInterval == 0 {
		c.RetentionInterval = 250 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// raftTimeouts overrides the Raft timeouts of one group's configuration
// with those set in c (zero keeps the group's own default).
func (c *Config) raftTimeouts(heartbeat, election, lease *time.Duration) {
	if c.HeartbeatTimeout > 0 {
		*heartbeat = c.HeartbeatTimeout
	}
	if c.ElectionTimeout > 0 {
		*election = c.ElectionTimeout
	}
	if c.LeaderLeaseTimeout > 0 {
		*lease = c.LeaderLeaseTimeout
	}
}

// ownGossipAddr is the gossip address recorded for this node in the
// Membership: GossipAddr when gossip has a port of its own, "" when it
// rides the bus port (peers join it at the bus address) or is off.
func (c *Config) ownGossipAddr() string {
	if c.GossipAddr == GossipOff {
		return ""
	}
	return c.GossipAddr
}

// clustered reports whether this configuration forms a multi-node cluster.
func (c *Config) clustered() bool { return c.BootstrapExpect > 1 || len(c.Join) > 0 }

// defaultShards is the shard count of a new cluster when Shards is 0.
func (c *Config) defaultShards() int {
	if c.clustered() {
		return perNodeShards(c.perNode(), c.BootstrapExpect, c.BootstrapExpect)
	}
	return 1
}

// perNode is K of a new cluster's shard policy.
func (c *Config) perNode() float64 {
	switch {
	case c.ShardsPerNode > 0:
		return c.ShardsPerNode
	case c.Shards > 0 && c.BootstrapExpect > 1:
		return float64(c.Shards) / float64(c.BootstrapExpect)
	}
	return 1
}

// fitsHosts reports whether a cluster formed with c fits its shard count
// to the hosts: unless the operator chose a count (Shards or
// ShardsPerNode).
func (c *Config) fitsHosts() bool { return c.Shards == 0 && c.ShardsPerNode == 0 }

// initialPolicy is the shard policy a cluster is formed with.
func (c *Config) initialPolicy() *ShardPolicy {
	return &ShardPolicy{Auto: !c.ShardPolicyOff, PerNode: c.perNode(), FitHosts: c.fitsHosts()}
}
