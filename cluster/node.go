package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/fsm/nodelog"
)

// Node is one raftstream process: the shards it hosts, the cluster bus, and
// the background loops. It is part of what the RESP server needs; its methods are safe for
// concurrent use.
type Node struct {
	cfg Config
	log *slog.Logger
	id  string
	dir string
	// nShards is the shard count the data dir was created with (formation
	// places that many; a node joining a cluster takes the cluster's); the
	// cluster's shards are its Membership's. Read with formedShards.
	nShards atomic.Int64
	// fitShards, when not 0, is the shard count this node formed the
	// cluster with after fitting it to the hosts (rpc.go, form); Start's
	// setMembers makes it the formed count.
	fitShards int
	// adopted: formation took a formed cluster's shard count (rpc.go,
	// form) before this node had that cluster's Membership. Guarded by
	// metaMu.
	adopted bool

	mux     *Mux
	raftBus *raftBus // every shard group's AppendEntries (raftbus.go)
	book    *addrBook
	self    Member

	// metaMu serialises changes to the persisted meta.
	metaMu sync.Mutex
	meta   meta

	// st is the current view: membership and local shard replicas. It is
	// replaced whole (copy on write) so Backend methods read it lock-free.
	st atomic.Pointer[state]
	// slots is the compiled slot map of st's Membership (slotmap.go), what
	// routing reads on every command.
	slots atomic.Pointer[slotView]
	// stMu serialises writers of st (read-modify-write); readers don't lock.
	stMu sync.Mutex

	notify atomic.Pointer[func(shard int, keys []string)]
	health *health
	// ctrl is this node's controller replica (nil if not a controller
	// voter). Set once in Start.
	ctrl atomic.Pointer[controller]
	// ctrlMu serialises this node's controller proposals (reconfig.go).
	ctrlMu sync.Mutex
	disc   *discovery
	// mig runs the slot moves this node drives (migrate.go).
	mig    *migrator
	gossip atomic.Pointer[gossip] // nil while gossip is off or not started
	// hostHash is hostHash(cfg.HostID); colocated the last CoLocated
	// count the gossip loop saw (0 before it ran).
	hostHash  string
	colocated atomic.Int32
	// bus counts the node's traffic on the cluster bus (busstats.go).
	bus busStats

	// nl is the node's shared Raft log (fsm/nodelog), opened with the
	// first shard replica that uses it and closed after every shard.
	nlMu sync.Mutex
	nl   *nodelog.Log

	startMu    sync.Mutex
	started    bool
	shutdownCh chan struct{}
	closeOnce  sync.Once
	wg         sync.WaitGroup
}

// state is an immutable view of the node.
type state struct {
	members *Membership
	// shards[i] is the local replica of shard i, nil if not hosted here.
	shards []*localShard
}

// hosted is how many shard replicas st has.
func (st *state) hosted() int {
	n := 0
	for _, ls := range st.shards {
		if ls != nil {
			n++
		}
	}
	return n
}

// localShard is one hosted shard replica, its transport, and what its
// followers acknowledged while it led (replication.go).
type localShard struct {
	s    *fsm.Shard
	tr   raft.WithClose // the group's transport, closed with the replica
	acks *replication
}

// Open validates cfg, creates or reopens the data dir (node ID, shard
// count), and opens the cluster bus. It starts no Raft group: call Start.
func Open(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, created, err := loadOrCreateMeta(cfg.Dir, cfg.Shards)
	if err != nil {
		return nil, err
	}
	if created {
		if m.Shards == 0 {
			m.Shards = cfg.defaultShards()
		}
		if err := saveMeta(cfg.Dir, m); err != nil {
			return nil, err
		}
	}
	if m.Members != nil {
		if err := m.Members.check(m.Shards); err != nil {
			return nil, fmt.Errorf("cluster: %s: %w", filepath.Join(cfg.Dir, metaFile), err)
		}
	}
	name := cfg.NodeName
	if name == "" {
		name = m.ID[:8]
	}
	log := cfg.Logger.With("node", name)
	mux, err := Listen(cfg.BindAddr, cfg.AdvertiseBus, cfg.DialTimeout, log)
	if err != nil {
		return nil, err
	}
	mux.dialMap = cfg.DebugDialMap
	mux.SetTLS(cfg.BusTLS)
	n := &Node{
		cfg: cfg, log: log, id: m.ID, dir: cfg.Dir,
		mux: mux, book: newAddrBook(), meta: m,
		self: Member{ID: m.ID, Host: cfg.AnnounceHost, Port: cfg.AnnouncePort, Bus: mux.Addr().String(), Gossip: cfg.ownGossipAddr(),
			HostHash: hostHash(cfg.HostID), CPUs: cfg.HostCPUs},
		shutdownCh: make(chan struct{}),
		hostHash:   hostHash(cfg.HostID),
	}
	n.nShards.Store(int64(m.Shards))
	mux.stats.Store(&n.bus)
	n.raftBus = newRaftBus(mux, n.book, log.With("component", "raftbus"), raftRPCTimeout)
	n.health = newHealth(n)
	n.mig = &migrator{running: map[uint64]context.CancelFunc{}, prog: map[uint64]*moveProgress{},
		lim: newRateLimiter(cfg.MigrateRate, cfg.MigrateChunk)}
	n.book.add(n.self)
	if m.Members != nil {
		if err := n.refreshSelf(); err != nil {
			mux.Close()
			return nil, err
		}
		m = n.meta
		for _, mb := range m.Members.Nodes {
			if mb.ID != n.id {
				n.book.add(mb)
			}
		}
	}
	n.updateState(func(*state) *state { return &state{members: m.Members, shards: make([]*localShard, m.Shards)} })
	n.startRPC()
	log.Info("node opened", "id", m.ID, "shards", m.Shards, "bus", n.self.Bus, "created", created)
	return n, nil
}

// refreshSelf records this node's current announce and bus addresses in its
// persisted Membership if they changed since it was written (a restart with
// another --port, say), so Topology announces where the node is now.
// NB: other nodes keep the old addresses until membership changes are
// replicated through the controller.
func (n *Node) refreshSelf() error {
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	old := n.meta.Members
	i := slices.IndexFunc(old.Nodes, func(m Member) bool { return m.ID == n.id })
	if i < 0 || old.Nodes[i] == n.self {
		return nil
	}
	n.log.Info("announce address changed", "was", old.Nodes[i].RESPAddr(), "now", n.self.RESPAddr(), "bus", n.self.Bus)
	nm := *old
	nm.Nodes = slices.Clone(old.Nodes)
	nm.Nodes[i] = n.self
	if err := nm.check(n.formedShards()); err != nil {
		return fmt.Errorf("cluster: new addresses: %w", err)
	}
	m := n.meta
	m.Members = &nm
	if err := saveMeta(n.dir, m); err != nil {
		return err
	}
	n.meta = m
	return nil
}

// observeMember takes note of a member's addresses as it reports them in
// its RPCs. If they differ from the recorded ones (it restarted with another
// announce or bus address), the Membership is updated with a higher Epoch,
// persisted, and the address book repointed, so Raft reaches it again and
// Topology announces it where it is. Invalid reports are ignored.
func (n *Node) observeMember(m Member) {
	if m.ID == n.id || !validNodeID(m.ID) {
		return
	}
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	old := n.meta.Members
	if old == nil {
		return
	}
	i := slices.IndexFunc(old.Nodes, func(x Member) bool { return x.ID == m.ID })
	if i < 0 {
		return
	}
	// Gossip tells addresses; the host a member formed or joined on stays.
	m.HostHash, m.CPUs = old.Nodes[i].HostHash, old.Nodes[i].CPUs
	if old.Nodes[i] == m {
		return
	}
	nm := *old
	nm.Nodes = slices.Clone(old.Nodes)
	nm.Nodes[i] = m
	nm.Epoch++
	if err := nm.check(n.formedShards()); err != nil {
		n.log.Warn("ignoring member addresses", "id", m.ID, "err", err)
		return
	}
	meta := n.meta
	meta.Members = &nm
	if err := saveMeta(n.dir, meta); err != nil {
		n.log.Error("persisting member addresses", "id", m.ID, "err", err)
		return
	}
	n.meta = meta
	n.book.add(m)
	n.updateState(func(old *state) *state { return &state{members: &nm, shards: old.shards} })
	n.log.Info("member moved", "id", m.ID, "resp", m.RESPAddr(), "bus", m.Bus, "epoch", nm.Epoch)
}

// ID is this node's 40-hex ID.
func (n *Node) ID() string { return n.id }

// BusAddr is the cluster bus address other nodes dial (useful with
// BindAddr ":0" in tests).
func (n *Node) BusAddr() string { return n.self.Bus }

// Config returns the validated configuration (Forwarding etc.).
func (n *Node) Config() Config { return n.cfg }

// Start forms the cluster on first start (single node: at once; with
// BootstrapExpect > 1: after discovering the other nodes through Join,
// bounded by ctx), opens the local shard replicas, bootstraps them when
// empty, and starts the background loops. It returns once every local
// shard is open; leaders are elected asynchronously (see WaitLeaders).
func (n *Node) Start(ctx context.Context) error {
	n.startMu.Lock()
	defer n.startMu.Unlock()
	if n.started {
		return errors.New("cluster: node already started")
	}
	select {
	case <-n.shutdownCh:
		return errors.New("cluster: node is closed")
	default:
	}
	n.metaMu.Lock()
	members := n.meta.Members
	n.metaMu.Unlock()
	if members == nil {
		var err error
		if n.cfg.clustered() {
			members, err = n.form(ctx)
		} else {
			members = place([]Member{n.self}, n.formedShards(), 1)
			members.Policy = n.cfg.initialPolicy()
		}
		if err != nil {
			return err
		}
		if err := n.setMembers(members); err != nil {
			return err
		}
	}
	if err := n.openShards(members); err != nil {
		n.closeShards()
		return err
	}
	// A controller replica runs here while members lists this node as a
	// controller voter; one with state on disk is reopened too, so a voter
	// restarted with a stale Membership keeps its vote until it learns
	// otherwise (reconcileController closes it then).
	if slices.Contains(ctrlVoterIDs(members), n.id) || hasControllerState(n.dir) {
		if err := n.startController(members, members.Ctrl == 0); err != nil {
			n.closeShards()
			return fmt.Errorf("cluster: controller: %w", err)
		}
	}
	if err := n.startGossip(); err != nil {
		n.log.Warn("gossip not started; polling every member instead (retried later)", "addr", n.cfg.GossipAddr, "err", err)
	}
	n.started = true
	n.goFunc(n.snapshotLoop)
	n.goFunc(n.health.loop)
	n.goFunc(n.reconcileLoop)
	n.goFunc(n.migrateLoop)
	n.goFunc(n.policyLoop)
	if n.cfg.BalanceInterval > 0 {
		n.goFunc(n.balanceLoop)
	}
	if n.cfg.ExpireInterval > 0 || n.cfg.RetentionInterval > 0 {
		n.goFunc(n.ageOutLoop)
	}
	return nil
}

// updateState replaces the published state with f(current), atomically
// with respect to other writers.
func (n *Node) updateState(f func(old *state) *state) {
	n.stMu.Lock()
	defer n.stMu.Unlock()
	old := n.st.Load()
	st := f(old)
	n.st.Store(st)
	if old == nil || st.members != old.members {
		n.publishSlots(st.members)
	}
	if h := st.hosted(); n.cfg.OnHosted != nil && (old == nil || h != old.hosted()) {
		n.cfg.OnHosted(h)
	}
}

// setMembers persists members (the formed cluster) and publishes it.
func (n *Node) setMembers(members *Membership) error {
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	m := n.meta
	m.Members = members
	if n.fitShards > 0 {
		m.Shards = n.fitShards
	}
	if err := saveMeta(n.dir, m); err != nil {
		return err
	}
	n.meta = m
	n.nShards.Store(int64(m.Shards))
	for _, mb := range members.Nodes {
		n.book.add(mb)
	}
	n.updateState(func(old *state) *state { return &state{members: members, shards: old.shards} })
	return nil
}

// openShards opens every shard replica members places on this node and,
// for a Membership never adopted from the controller (formation), bootstraps
// the empty ones with the recorded initial configuration. A replica placed
// here later is never bootstrapped: its leader adds it and replicates to it.
func (n *Node) openShards(members *Membership) error {
	shards := make([]*localShard, len(members.Shards))
	for i := range shards {
		if !members.Hosts(i, n.id) {
			continue
		}
		ls, err := n.openShard(i)
		if err != nil {
			n.publishShards(shards)
			return fmt.Errorf("cluster: shard %d: %w", i, err)
		}
		shards[i] = ls
		if members.Ctrl != 0 {
			continue
		}
		if err := ls.s.BootstrapIfEmpty(members.servers(i)); err != nil {
			n.publishShards(shards)
			return fmt.Errorf("cluster: bootstrap shard %d: %w", i, err)
		}
	}
	n.publishShards(shards)
	return nil
}

// publishShards makes shards the local replicas, keeping the membership.
func (n *Node) publishShards(shards []*localShard) {
	n.updateState(func(old *state) *state { return &state{members: old.members, shards: shards} })
}

func (n *Node) openShard(i int) (*localShard, error) {
	// fsm.Open adds the "shard" attribute to fc.Logger itself; the hclog
	// logger of the shard's raft and transport, made here, needs it added.
	raftLog := newHCLogger(n.log.With("shard", i), slog.LevelWarn)
	tr := n.groupTransport(ShardGroup(i), raftLog, 3)
	fc := fsm.DefaultConfig()
	fc.ShardID = i
	fc.Dir = filepath.Join(n.dir, "shards", strconv.Itoa(i))
	fc.LocalID = raft.ServerID(n.id)
	fc.Logger = n.log
	fc.RaftLogger = raftLog
	fc.Engine = n.cfg.Engine
	fc.Notify = n.dispatchNotify
	fc.KeysOf = n.cfg.KeysOf
	fc.TrailingLogs = n.cfg.TrailingLogs
	fc.StuckTransferAfter = n.cfg.StuckTransferAfter
	fc.Now = n.cfg.Now
	fc.InjectBug = n.cfg.InjectBug
	fc.LogStore = n.cfg.LogStore
	fc.LogStoreFaultFile = n.cfg.LogStoreFaultFile
	if g := n.cfg.MaxGather; g != 0 {
		fc.MaxGather = max(g, 0)
	}
	n.cfg.raftTimeouts(&fc.HeartbeatTimeout, &fc.ElectionTimeout, &fc.LeaderLeaseTimeout)
	acks := newReplication(fc.ElectionTimeout)
	var gt shardTransport = announcingTransport{tr, &n.bus}
	var closer raft.WithClose = tr
	if n.cfg.RaftBus {
		bt := n.raftBus.transport(i, tr, &n.bus)
		gt, closer = bt, bt
		if n.cfg.EarlyReplication {
			fc.EarlyReplicate = bt.ReplicateEarly
		}
	}
	fc.Transport = ackingTransport{gt, acks, &n.raftBus.stats}
	if err := os.MkdirAll(fc.Dir, 0o755); err != nil {
		closer.Close()
		return nil, err
	}
	nl, err := n.nodeLog()
	if err != nil {
		closer.Close()
		return nil, err
	}
	fc.NodeLog = nl
	s, err := fsm.Open(fc)
	if err != nil {
		closer.Close()
		return nil, err
	}
	return &localShard{s: s, tr: closer, acks: acks}, nil
}

// nodeLog opens the node's shared Raft log on first use.
func (n *Node) nodeLog() (*nodelog.Log, error) {
	n.nlMu.Lock()
	defer n.nlMu.Unlock()
	if n.nl == nil {
		opts := nodelog.Options{Dir: filepath.Join(n.dir, "nodelog"), Logger: n.log.With("component", "nodelog"),
			SegmentBytes: n.cfg.NodeLogSegmentBytes}
		nl, err := nodelog.Open(opts)
		if err != nil {
			return nil, fmt.Errorf("cluster: open the node log: %w", err)
		}
		n.nl = nl
	}
	return n.nl, nil
}

// NodeLogStats are the counters of the node's shared Raft log (zero if no
// shard uses it).
func (n *Node) NodeLogStats() nodelog.Stats {
	n.nlMu.Lock()
	defer n.nlMu.Unlock()
	if n.nl == nil {
		return nodelog.Stats{}
	}
	return n.nl.Stats()
}

func (n *Node) dispatchNotify(shard int, keys []string) {
	if f := n.notify.Load(); f != nil {
		(*f)(shard, keys)
	}
}

func (n *Node) goFunc(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Close stops the background loops, hands leadership of the shards this
// node leads to another voter where one exists (bounded wait), closes the
// shards, their transports, and the cluster bus. Idempotent.
func (n *Node) Close() error { return n.close(true) }

// close is Close; with transfer false it skips the leadership hand-off, so
// peers see what a crash looks like (tests).
func (n *Node) close(transfer bool) error {
	var err error
	n.closeOnce.Do(func() {
		close(n.shutdownCh)
		// A concurrent Start sees shutdownCh (formation returns) and
		// releases startMu; after that no shard or controller is opened.
		n.startMu.Lock()
		defer n.startMu.Unlock()
		n.wg.Wait()
		if transfer {
			n.transferAway()
		}
		n.stopGossip()
		err = n.closeShards()
		if c := n.ctrl.Load(); c != nil {
			err = errors.Join(err, c.close())
		}
		n.nlMu.Lock()
		if n.nl != nil {
			err = errors.Join(err, n.nl.Close())
		}
		n.nlMu.Unlock()
		n.raftBus.Close()
		if e := n.mux.Close(); err == nil {
			err = e
		}
		n.log.Info("node closed")
	})
	return err
}

// transferAway moves leadership of every led shard with other voters to one
// of them, all shards in parallel, waiting at most a few election timeouts.
func (n *Node) transferAway() {
	st := n.st.Load()
	var wg sync.WaitGroup
	for i, ls := range st.shards {
		if ls == nil || !ls.s.IsLeader() || st.members == nil || len(st.members.Shards[i]) < 2 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := ls.s.TransferLeadership("", "")
			done := make(chan error, 1)
			go func() { done <- f.Error() }()
			select {
			case err := <-done:
				if err != nil {
					n.log.Warn("leadership transfer on close", "shard", i, "err", err)
				}
			case <-time.After(5 * time.Second):
				n.log.Warn("leadership transfer on close timed out", "shard", i)
			}
		}()
	}
	if voters, _, ok := n.ctrlConfig(); ok && n.ctrl.Load().r.State() == raft.Leader && len(voters) > 1 {
		c := n.ctrl.Load()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.r.LeadershipTransfer().Error(); err != nil {
				n.log.Warn("controller leadership transfer on close", "err", err)
			}
		}()
	}
	wg.Wait()
}

func (n *Node) closeShards() error {
	st := n.st.Load()
	errs := make([]error, len(st.shards))
	var wg sync.WaitGroup
	for i, ls := range st.shards {
		if ls == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Transport first: an RPC to an unresponsive peer then fails at
			// once instead of holding Raft.Shutdown for its full timeout.
			errs[i] = errors.Join(ls.tr.Close(), ls.s.Close())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// shard returns the local replica of shard i, or nil.
func (n *Node) shard(i int) *localShard { return n.st.Load().local(i) }

// formedShards is the shard count the cluster was formed with.
func (n *Node) formedShards() int { return int(n.nShards.Load()) }

// NumShards is part of what the RESP server needs: the number of shard
// numbers in use (shards are numbered from 0 and never renumbered).
func (n *Node) NumShards() int { return n.numShards(n.st.Load()) }

// numShards is the shard count of st's Membership (the creation count
// before formation).
func (n *Node) numShards(st *state) int {
	if st.members == nil {
		return n.formedShards()
	}
	return len(st.members.Shards)
}

// local returns the local replica of shard i, or nil.
func (st *state) local(i int) *localShard {
	if i < 0 || i >= len(st.shards) {
		return nil
	}
	return st.shards[i]
}

// Submit is part of what the RESP server needs: the unit goes to the local replica of
// shard, which fails it with *fsm.NotLeaderError unless it leads. A shard
// not hosted here fails with *fsm.NotLeaderError naming its leader as last
// reported by the replicas (or its preferred replica when none is known).
func (n *Node) Submit(shard int, unit fsm.Unit) *fsm.Future {
	if ls := n.shard(shard); ls != nil && !n.movingAway(shard, ls) {
		return ls.s.Submit(unit)
	}
	return fsm.FailedFuture(n.remoteLeader(shard))
}

// movingAway reports whether ls, the local replica of shard, is no longer
// placed here and knows no leader: a replica its leader removed without
// telling it (reconfig.go, leftBehind) stays open for a while, and would
// answer "leader unknown" (TRYAGAIN) to every retry meanwhile. Such a
// shard is answered as one not hosted here, naming the leader the other
// members report.
func (n *Node) movingAway(shard int, ls *localShard) bool {
	st := n.st.Load()
	if st.members == nil || st.members.Hosts(shard, n.id) || ls.s.IsLeader() {
		return false
	}
	id, _ := ls.s.Leader()
	return id == ""
}

// Read is part of what the RESP server needs.
func (n *Node) Read(ctx context.Context, shard int, stale bool, fn func(e *engine.Engine)) error {
	ls := n.shard(shard)
	if ls == nil || (!stale && n.movingAway(shard, ls)) {
		return n.remoteLeader(shard)
	}
	if stale {
		ls.s.StaleRead(fn)
		return nil
	}
	return ls.s.Read(ctx, fn)
}

// remoteLeader is the NotLeaderError for a shard not hosted here.
func (n *Node) remoteLeader(shard int) error {
	st := n.st.Load()
	if st.members == nil || shard < 0 || shard >= len(st.members.Shards) {
		return &fsm.NotLeaderError{}
	}
	id := n.health.leaderOf(shard)
	if id == "" && len(st.members.Shards[shard]) > 0 && st.members.Shards[shard][0] != n.id {
		id = st.members.Shards[shard][0]
	}
	m, ok := st.members.Node(id)
	if !ok {
		return &fsm.NotLeaderError{}
	}
	return &fsm.NotLeaderError{LeaderID: id, LeaderAddr: m.RESPAddr()}
}

// SetNotify is part of what the RESP server needs.
func (n *Node) SetNotify(f func(shard int, keys []string)) {
	if f == nil {
		n.notify.Store(nil)
		return
	}
	n.notify.Store(&f)
}

// Topology is part of what the RESP server needs. Leaders of local shards come from their
// Raft state, others from the replicas' last health report.
func (n *Node) Topology() Topology {
	st := n.st.Load()
	sv := n.slots.Load()
	t := Topology{MyID: n.id, Shards: make([]ShardInfo, n.numShards(st)), SlotEpoch: sv.epoch,
		Slots: sv.m.Runs(), Moves: slices.Clone(sv.moves)}
	if st.members == nil {
		t.Nodes = []NodeInfo{n.nodeInfo(n.self, true)}
	} else {
		t.Epoch = st.members.Epoch
		for _, m := range st.members.Nodes {
			ni := n.nodeInfo(m, m.ID == n.id || n.health.up(m.ID))
			if m.ID != n.id && ni.Up {
				ni.UpSince = n.health.since(m.ID)
			}
			t.Nodes = append(t.Nodes, ni)
		}
	}
	for i := range t.Shards {
		si := ShardInfo{Slots: sv.m.RangesOf(i)}
		if st.members != nil {
			si.Replicas = append([]string(nil), st.members.Shards[i]...)
		}
		if ls := st.local(i); ls != nil {
			si.Leader, _ = ls.s.Leader()
			if si.Leader == "" {
				// No leader known here (an election, or this node is cut
				// off): the last leader another member reported is a
				// better guess for clients' slot maps than none, which
				// would list the lowest-ID replica, possibly this node,
				// as the master; clients would then ask it and get
				// TRYAGAIN until their map changed. Never this node: it
				// knows it does not lead.
				if h := n.health.leaderOf(i); h != n.id {
					si.Leader = h
				}
			}
		} else {
			si.Leader = n.health.leaderOf(i)
		}
		t.Shards[i] = si
	}
	return t
}

func (n *Node) nodeInfo(m Member, up bool) NodeInfo {
	bus := 0
	if _, p, err := splitHostPort(m.Bus); err == nil {
		bus = p
	}
	return NodeInfo{ID: m.ID, Host: m.Host, Port: m.Port, Bus: bus, Up: up}
}

// ShardStatus is part of what the RESP server needs.
func (n *Node) ShardStatus(shard int) (ShardStatus, bool) {
	ls := n.shard(shard)
	if ls == nil {
		return ShardStatus{}, false
	}
	st := shardStatus(ls)
	if f := ls.s.Raft().GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				st.Voters = append(st.Voters, string(s.ID))
			} else {
				st.Nonvoters = append(st.Nonvoters, string(s.ID))
			}
			if st.Role == "leader" && string(s.ID) != n.id {
				fs := FollowerStatus{ID: string(s.ID), Voter: s.Suffrage == raft.Voter}
				if ls.acks != nil {
					fs.Stored, fs.Known = ls.acks.stored(s.ID, st.Term)
				}
				st.Followers = append(st.Followers, fs)
			}
		}
	}
	return st, true
}

// shardStatus is the Raft state of the local replica ls.
func shardStatus(ls *localShard) ShardStatus {
	s := ls.s.Status()
	return ShardStatus{
		Role: s.Role, Term: s.Term, CommitIndex: s.CommitIndex,
		AppliedIndex: s.AppliedIndex, LastIndex: s.LastIndex, Leader: s.LeaderID,
	}
}

// WaitLeaders blocks until every live shard (not retired) has a known
// leader (local Raft state or health reports), or ctx ends.
func (n *Node) WaitLeaders(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		ok := true
		for _, s := range n.Topology().Shards {
			if s.Leader == "" && len(s.Replicas) > 0 { // a retired shard has none
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for shard leaders: %w", ctx.Err())
		case <-t.C:
		}
	}
}
