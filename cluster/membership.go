package cluster

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Member is one node of the cluster as recorded at formation.
type Member struct {
	ID   string `json:"id"`   // 40 hex chars
	Host string `json:"host"` // announced RESP host
	Port int    `json:"port"` // announced RESP port
	Bus  string `json:"bus"`  // cluster bus address host:port
	// Gossip is the memberlist address host:port ("" without gossip).
	Gossip string `json:"gossip,omitempty"`
	// HostHash (a hash of Config.HostID, "" without one) and CPUs
	// (Config.HostCPUs, 0 unknown) are the member's host as it formed or
	// joined the cluster: a shard policy that fits the hosts counts them
	// (policy.go, hostUnits).
	HostHash string `json:"hh,omitempty"`
	CPUs     int    `json:"cpus,omitempty"`
}

// RESPAddr is the member's announced RESP address, host:port.
func (m Member) RESPAddr() string { return net.JoinHostPort(m.Host, strconv.Itoa(m.Port)) }

// Membership is the formed cluster: the node set and each shard's replica
// set. Every node of a formed cluster holds an identical Membership (it is
// computed deterministically from the sorted node set) and persists it.
type Membership struct {
	// Nodes sorted by ID.
	Nodes []Member `json:"nodes"`
	// Shards[i] lists the node IDs of shard i's voters. Shards[i][0] is the
	// preferred leader, which the balancer moves leadership to. Shards are
	// numbered for life: a shard added later is appended, a retired one
	// (shards.go) keeps its number with no replicas.
	Shards [][]string `json:"shards"`
	// Epoch increases with every change of the membership (1 at formation).
	Epoch uint64 `json:"epoch"`
	// Draining lists members being removed: the controller moves their
	// replicas elsewhere, then drops them from Nodes.
	Draining []string `json:"draining,omitempty"`
	// Removed lists the IDs of nodes dropped from the cluster; they may not
	// join again (IDs are never reused).
	Removed []string `json:"removed,omitempty"`
	// CtrlVoters lists the node IDs the controller group should have as
	// voters (ctrlvoters.go), sorted. The controller leader changes it
	// through the controller log and converges the group's Raft
	// configuration to it; a node runs a controller replica only while it is
	// listed here or in that configuration. Empty in a Membership formed
	// before the list existed: then the first min(5, N) members by ID.
	CtrlVoters []string `json:"ctrl_voters,omitempty"`
	// Ctrl is the controller Epoch this node last adopted (a node's local
	// Epoch also moves when it observes a member's new addresses, so the two
	// differ). 0 before the first adoption.
	Ctrl uint64 `json:"ctrl,omitempty"`
	// Slots is the slot → shard map and the slot moves in flight
	// (slotmap.go); nil in a Membership written before the map was
	// replicated, which routes by contiguous ranges over its shards.
	Slots *SlotTable `json:"slots,omitempty"`
	// Policy is the automatic shard policy (policy.go); nil in a
	// Membership written before it existed: off.
	Policy *ShardPolicy `json:"policy,omitempty"`
}

// clone returns a deep copy of m.
func (m *Membership) clone() *Membership {
	c := *m
	c.Nodes = slices.Clone(m.Nodes)
	c.Shards = make([][]string, len(m.Shards))
	for i, r := range m.Shards {
		c.Shards[i] = slices.Clone(r)
	}
	c.Draining = slices.Clone(m.Draining)
	c.Removed = slices.Clone(m.Removed)
	c.CtrlVoters = slices.Clone(m.CtrlVoters)
	c.Slots = m.Slots.clone()
	if m.Policy != nil {
		p := *m.Policy
		c.Policy = &p
	}
	return &c
}

// byID orders members by ID, the order Membership.Nodes is kept in.
func byID(a, b Member) int { return strings.Compare(a.ID, b.ID) }

// place builds the Membership of nodes (any order) with nShards shards, rf
// replicas each (capped at len(nodes)), placed round-robin: shard i's
// replicas are nodes[(i+k) % n] for k < rf, so preferred leaders rotate and
// with 3 nodes and 16 shards every node prefers 5 or 6 shards. The
// controller's voters are the first ctrlTarget(n) nodes by ID.
func place(nodes []Member, nShards, rf int) *Membership {
	ns := slices.Clone(nodes)
	slices.SortFunc(ns, byID)
	rf = min(rf, len(ns))
	m := &Membership{Nodes: ns, Shards: make([][]string, nShards), Epoch: 1}
	for i := range m.Shards {
		for k := 0; k < rf; k++ {
			m.Shards[i] = append(m.Shards[i], ns[(i+k)%len(ns)].ID)
		}
	}
	for _, n := range ns[:ctrlTarget(len(ns))] {
		m.CtrlVoters = append(m.CtrlVoters, n.ID)
	}
	return m
}

// Node returns the member with id.
func (m *Membership) Node(id string) (Member, bool) {
	for _, n := range m.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Member{}, false
}

// Hosts reports whether node id is a replica of shard i.
func (m *Membership) Hosts(i int, id string) bool { return slices.Contains(m.Shards[i], id) }

// servers is shard i's initial Raft configuration. Raft addresses are the
// members' RESP addresses (see DESIGN.md, "Raft addresses"); the transport
// dials the bus through the address book.
func (m *Membership) servers(i int) []raft.Server {
	var out []raft.Server
	for _, id := range m.Shards[i] {
		n, _ := m.Node(id)
		out = append(out, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(n.RESPAddr())})
	}
	return out
}

// check verifies the invariants of a Membership loaded from disk; shards
// is the count the cluster was formed with (shards are added, never
// renumbered).
func (m *Membership) check(shards int) error {
	if len(m.Shards) < shards {
		return fmt.Errorf("membership has %d shards, want at least %d", len(m.Shards), shards)
	}
	resp, bus := map[string]string{}, map[string]string{}
	for _, n := range m.Nodes {
		if other, dup := resp[n.RESPAddr()]; dup {
			return fmt.Errorf("nodes %s and %s announce the same RESP address %s", other, n.ID, n.RESPAddr())
		}
		if other, dup := bus[n.Bus]; dup {
			return fmt.Errorf("nodes %s and %s advertise the same bus address %s", other, n.ID, n.Bus)
		}
		resp[n.RESPAddr()], bus[n.Bus] = n.ID, n.ID
	}
	for _, id := range m.CtrlVoters {
		if _, ok := m.Node(id); !ok {
			return fmt.Errorf("controller voter %s is not a member", id)
		}
	}
	for i, rs := range m.Shards {
		// A shard with no replicas is retired (shards.go); checkSlots
		// makes sure no slot is assigned to one.
		for _, id := range rs {
			if _, ok := m.Node(id); !ok {
				return fmt.Errorf("shard %d replica %s is not a member", i, id)
			}
		}
	}
	return m.checkSlots()
}

// addrBook resolves Raft server IDs (node IDs) to cluster bus addresses; it
// is the raft.ServerAddressProvider of every group's transport. Safe for
// concurrent use.
type addrBook struct {
	mu      sync.RWMutex
	bus     map[string]string // node ID → bus address
	respBus map[string]string // RESP address → bus address
}

func newAddrBook() *addrBook {
	return &addrBook{bus: make(map[string]string), respBus: make(map[string]string)}
}

// add records member m's addresses.
func (b *addrBook) add(m Member) {
	b.mu.Lock()
	b.bus[m.ID] = m.Bus
	b.respBus[m.RESPAddr()] = m.Bus
	b.mu.Unlock()
}

// dialAddr maps a Raft address to the bus address to dial: a RESP address
// of a known member becomes its bus address; anything else is returned as
// is (it already is a bus address from ServerAddr).
func (b *addrBook) dialAddr(a string) string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if bus, ok := b.respBus[a]; ok {
		return bus
	}
	return a
}

// ServerAddr implements raft.ServerAddressProvider.
func (b *addrBook) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	a, ok := b.bus[string(id)]
	if !ok {
		return "", fmt.Errorf("cluster: no bus address for node %s", id)
	}
	return raft.ServerAddress(a), nil
}

// raftRPCTimeout bounds a Raft RPC on the bus, its writes and reads
// (InstallSnapshot: per raft's rule, scaled by the snapshot's size).
const raftRPCTimeout = 10 * time.Second

// groupTransport opens the Raft transport of one group hosted here: its
// connections ride the bus under the group's name, peers' bus addresses come
// from the address book, and raft records this node by its RESP address
// (announcedLayer). Hand raft announcingTransport{tr}; close tr.
func (n *Node) groupTransport(group string, raftLog hclog.Logger, maxPool int) *raft.NetworkTransport {
	layer := announcedLayer{StreamLayer: n.mux.Layer(group), addr: strAddr(n.self.RESPAddr()), book: n.book}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		ServerAddressProvider: n.book,
		Logger:                shutdownQuiet{raftLog.Named("transport")},
		Stream:                layer,
		MaxPool:               maxPool,
		Timeout:               raftRPCTimeout,
	})
}

// announcedLayer is a group's stream layer whose Addr is the node's RESP
// announce address, so that raft reports leaders by the address clients
// must be redirected to. Dialing never uses it: the address book resolves
// IDs to bus addresses.
type announcedLayer struct {
	*StreamLayer
	addr strAddr
	book *addrBook
}

func (l announcedLayer) Addr() net.Addr { return l.addr }

// Dial connects to the bus of the node at address (a bus address from the
// address book, or a member's RESP address when raft fell back to it).
func (l announcedLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.StreamLayer.Dial(raft.ServerAddress(l.book.dialAddr(string(address))), timeout)
}

// strAddr is a net.Addr that is just a host:port string.
type strAddr string

func (a strAddr) Network() string { return "tcp" }
func (a strAddr) String() string  { return string(a) }

// announcingTransport is a NetworkTransport whose RPC headers carry the
// sender's Raft address as given (its RESP announce address) instead of the
// address provider's answer for its own ID (its bus address), which
// NetworkTransport.EncodePeer would send. Followers thus learn the leader's
// RESP address. All other methods, including the optional WithClose and
// WithPreVote, are the embedded transport's, except pipelining and the
// heartbeat fast path (below).
type announcingTransport struct {
	*raft.NetworkTransport
	// bus counts the Raft requests sent (busstats.go).
	bus *busStats
}

// AppendEntries implements raft.Transport (heartbeats too: the fast path
// is off, see SetHeartbeatHandler).
//
// resp's header byte strings are dropped first: raft reuses a response
// across calls, the raft bus fills them with strings shared by every group
// on a connection (raftwire.go, interned), and msgpack decodes into a
// slice's existing array, which would write over the shared copy.
func (t announcingTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.bus.raftReqs.Add(1)
	resp.ID, resp.Addr = nil, nil
	return t.NetworkTransport.AppendEntries(id, target, args, resp)
}

// RequestVote implements raft.Transport.
func (t announcingTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	t.bus.raftReqs.Add(1)
	return t.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote.
func (t announcingTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	t.bus.raftReqs.Add(1)
	return t.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// InstallSnapshot implements raft.Transport.
func (t announcingTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	t.bus.raftReqs.Add(1)
	return t.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
}

// TimeoutNow implements raft.Transport.
func (t announcingTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	t.bus.raftReqs.Add(1)
	return t.NetworkTransport.TimeoutNow(id, target, args, resp)
}

// AppendEntriesPipeline disables pipelined replication: raft v1.8.0's
// pipeline can deadlock when a follower rejects an append while a send is
// parked on the (default, unbuffered) in-flight channel — replication to
// that follower stops for good and Raft.Shutdown never returns (seen here
// as a 3-node test hanging in Close; the same analysis in
// grafana/pyroscope#5518). Entries are already batched by fsm, so one
// AppendEntries in flight per follower costs little.
func (t announcingTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// SetHeartbeatHandler does not install raft's heartbeat fast path, so
// heartbeats reach the raft goroutine like every other RPC. On the fast
// path, raft v1.8.0 runs appendEntries on the transport's goroutine: a
// heartbeat carrying a newer term raises currentTerm while the old leader's
// loop may be stamping a client entry with getCurrentTerm(), which then
// bears a term that leader does not lead, at an index where the real
// leader of that term wrote something else. Both count as (index, term)
// matches, so the logs diverge for good (hashicorp/raft#695). The fault
// suite hit it: a leader resumed from SIGSTOP wrote such an entry, and
// once it led again an acknowledged XADD read back with another ID
// (jepsen/testdata/raftstream-soak-id-changed.jsonl). Heartbeats may now
// wait behind a log write, as in raft without the fast path.
func (t announcingTransport) SetHeartbeatHandler(func(raft.RPC)) {}

// EncodePeer implements raft.Transport.
func (t announcingTransport) EncodePeer(_ raft.ServerID, p raft.ServerAddress) []byte {
	return []byte(p)
}
