package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Gossip (hashicorp/memberlist) is a cluster's failure detector and
// metadata channel. It is never used for a safety decision: Raft decides
// leadership and the controller decides topology. What it feeds (health.go)
// is who is up, which shards each member leads, how many replicas it has
// open and which controller Membership it adopted; polls of every member
// by every member (N² requests) are left for members gossip does not cover.
//
// Port rule: by default (Config.GossipAddr "") memberlist rides the cluster
// bus port: its streams are bus connections of the "gossip" group and its
// datagrams are UDP on the bus port number (gossipbus.go), advertised at
// the bus's advertised host resolved to an IP. Config.GossipAddr IP:port
// runs it on a port of its own (TCP and UDP) instead; GossipOff turns it
// off (every member is then polled). Every node of a cluster must use the
// same rule.
//
// Each node runs one memberlist named by its node ID, DefaultLocalConfig
// with LAN's RetransmitMult, Label Config.GossipLabel (clusters sharing a
// network never merge) and SecretKey Config.GossipKey. Its metadata
// (≤ 512 bytes) is gossipMeta, republished when it changes (checked every
// gossipRefresh). Callbacks only poke the refresh loop: they never block
// memberlist.
type gossip struct {
	ml   *memberlist.Memberlist
	mode string // "bus" or "own port"
	once sync.Once
	mu   sync.Mutex
	meta []byte // this node's current metadata (NodeMeta)
	// poke wakes the refresh loop (memberlist events), non-blocking.
	poke chan struct{}
	// fetching is set while a newer controller Membership is fetched.
	fetching atomic.Bool
	// vmu guards members: the members memberlist reports alive, with
	// their metadata, as its events delivered them (memberlist.Members
	// hands out nodes it goes on changing, so it is not read).
	vmu     sync.Mutex
	members map[string]gossipMeta
}

// GossipOff is the Config.GossipAddr value that turns gossip off.
const GossipOff = "off"

// gossipRefresh is how often a node republishes its metadata if it
// changed and folds memberlist's view into health.
const gossipRefresh = 250 * time.Millisecond

// gossipMeta is a node's gossip metadata. Leads holds (shard, term) pairs
// for the shards it leads; when they do not fit in memberlist's 512 bytes
// they are left out and Partial set (peers then poll it).
type gossipMeta struct {
	RESP    string   `json:"resp"`
	Bus     string   `json:"bus"`
	Ctrl    uint64   `json:"ctrl,omitempty"`
	Hosted  int      `json:"h,omitempty"`
	Leads   []uint64 `json:"l,omitempty"`
	Partial bool     `json:"p,omitempty"`
	// Host is a hash of the node's Config.HostID ("" when it has none).
	Host string `json:"host,omitempty"`
}

// leads returns m's leaderships as shard → term.
func (m gossipMeta) leads() map[int]uint64 {
	out := make(map[int]uint64, len(m.Leads)/2)
	for i := 0; i+1 < len(m.Leads); i += 2 {
		out[int(m.Leads[i])] = m.Leads[i+1]
	}
	return out
}

// encode returns m as metadata of at most limit bytes, leaving out the
// leaderships if they do not fit.
func (m gossipMeta) encode(limit int) []byte {
	b, _ := json.Marshal(m)
	if len(b) <= limit {
		return b
	}
	m.Leads, m.Partial = nil, true
	b, _ = json.Marshal(m)
	return b
}

// gossipDelegate implements memberlist.Delegate (metadata only) and
// memberlist.EventDelegate. memberlist calls the events holding its node
// lock, so the node they describe is read there and only there.
type gossipDelegate struct{ g *gossip }

func (d *gossipDelegate) NodeMeta(limit int) []byte {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	if len(d.g.meta) > limit {
		return nil
	}
	return d.g.meta
}
func (d *gossipDelegate) NotifyMsg([]byte)                {}
func (d *gossipDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d *gossipDelegate) LocalState(bool) []byte          { return nil }
func (d *gossipDelegate) MergeRemoteState([]byte, bool)   {}

func (d *gossipDelegate) wake() {
	select {
	case d.g.poke <- struct{}{}:
	default:
	}
}

// alive records n as alive with its metadata.
func (d *gossipDelegate) alive(n *memberlist.Node) {
	var m gossipMeta
	_ = json.Unmarshal(n.Meta, &m)
	d.g.vmu.Lock()
	d.g.members[n.Name] = m
	d.g.vmu.Unlock()
	d.wake()
}

func (d *gossipDelegate) NotifyJoin(n *memberlist.Node)   { d.alive(n) }
func (d *gossipDelegate) NotifyUpdate(n *memberlist.Node) { d.alive(n) }
func (d *gossipDelegate) NotifyLeave(n *memberlist.Node) {
	d.g.vmu.Lock()
	delete(d.g.members, n.Name)
	d.g.vmu.Unlock()
	d.wake()
}

// gossipWanted reports whether this node should run gossip now: it is not
// off, and the node is a member of a cluster of more than one node.
func (n *Node) gossipWanted() bool {
	if n.cfg.GossipAddr == GossipOff {
		return false
	}
	m := n.st.Load().members
	if m == nil || len(m.Nodes) < 2 {
		return false
	}
	_, member := m.Node(n.id)
	return member
}

// startGossip creates this node's memberlist if gossipWanted and it runs
// none.
func (n *Node) startGossip() error {
	if !n.gossipWanted() || n.gossip.Load() != nil {
		return nil
	}
	g := &gossip{poke: make(chan struct{}, 1), members: map[string]gossipMeta{}}
	g.meta = n.localMeta().encode(memberlist.MetaMaxSize)
	c := memberlist.DefaultLocalConfig()
	// Each broadcast goes out RetransmitMult*ceil(log10(nodes+1)) times,
	// and Leave returns once the last of those is dequeued, before it is
	// sent. With the local default of 2 and three nodes, one of which was
	// recently failed (gossip still reaches failed nodes for a while), the
	// only copy for the live peer could be that last one, lost to
	// Shutdown closing the socket. LAN's 4 makes it two gossip rounds, so
	// each live peer gets a copy sent in full before Leave returns.
	c.RetransmitMult = 4
	// Names are node IDs, never reused: a member that comes back at
	// another address (a restarted pod) is the same node, so its new
	// address is taken at once instead of being refused as a conflict
	// until memberlist forgets the dead entry.
	c.DeadNodeReclaimTime = time.Nanosecond
	c.Name = n.id
	c.Label = n.cfg.GossipLabel
	c.SecretKey = n.cfg.GossipKey // nil: plaintext gossip
	c.Delegate, c.Events = &gossipDelegate{g}, &gossipDelegate{g}
	c.Logger = log.New(io.Discard, "", 0)
	if n.cfg.GossipAddr == "" {
		t, err := n.busGossip()
		if err != nil {
			return err
		}
		g.mode = "bus"
		c.Transport = t
		c.AdvertiseAddr, c.AdvertisePort = t.advIP.String(), t.advPort
	} else {
		host, port, err := splitHostPort(n.cfg.GossipAddr)
		if err != nil {
			return err
		}
		g.mode = "own port"
		c.BindAddr, c.BindPort = host, port
		c.AdvertiseAddr, c.AdvertisePort = host, port
	}
	ml, err := memberlist.Create(c)
	if err != nil {
		if t, ok := c.Transport.(*busGossipTransport); ok {
			t.Shutdown()
		}
		return err
	}
	g.ml = ml
	n.gossip.Store(g)
	n.goFunc(func() { n.gossipLoop(g) })
	n.log.Info("gossip started", "mode", g.mode, "addr", net.JoinHostPort(c.AdvertiseAddr, strconv.Itoa(c.AdvertisePort)))
	return nil
}

// busGossip opens gossip's transport on the bus port: UDP on the bus
// listener's host and port, advertised at the bus's advertised host
// (resolved to an IP: memberlist addresses are IPs) and port.
func (n *Node) busGossip() (*busGossipTransport, error) {
	advHost, advPort, err := splitHostPort(n.self.Bus)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(advHost)
	if ip == nil {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.DialTimeout)
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", advHost)
		cancel()
		if err != nil || len(ips) == 0 {
			return nil, errors.Join(errors.New("gossip: resolving the advertised bus host "+advHost), err)
		}
		ip = ips[0]
		for _, c := range ips {
			if c.To4() != nil {
				ip = c
				break
			}
		}
	}
	bind := n.mux.ln.Addr().(*net.TCPAddr)
	return newBusGossipTransport(n.mux, bind.IP.String(), bind.Port, ip, advPort, &n.bus)
}

// localMeta is this node's gossip metadata now.
func (n *Node) localMeta() gossipMeta {
	st := n.st.Load()
	m := gossipMeta{RESP: n.self.RESPAddr(), Bus: n.self.Bus, Host: n.hostHash}
	if st.members != nil {
		m.Ctrl = st.members.Ctrl
	}
	for i, ls := range st.shards {
		if ls == nil {
			continue
		}
		m.Hosted++
		if ls.s.IsLeader() {
			m.Leads = append(m.Leads, uint64(i), ls.s.Raft().CurrentTerm())
		}
	}
	return m
}

// gossipLoop republishes this node's metadata when it changed, folds
// memberlist's view into health, takes note of members' new addresses,
// fetches a newer controller Membership a member reports, (re)joins the
// members memberlist does not see, and leaves once this node was removed.
func (n *Node) gossipLoop(g *gossip) {
	t := time.NewTicker(gossipRefresh)
	defer t.Stop()
	var lastJoin time.Time
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-g.poke:
		case <-t.C:
		}
		st := n.st.Load()
		if st.members == nil {
			continue
		}
		if _, ok := st.members.Node(n.id); !ok && slices.Contains(st.members.Removed, n.id) {
			n.log.Info("gossip: this node was removed from the cluster; leaving")
			n.noteCoLocated(1)
			g.stop(true)
			return
		}
		if b := n.localMeta().encode(memberlist.MetaMaxSize); !g.setMeta(b) {
			_ = g.ml.UpdateNode(gossipRefresh)
		}
		view := g.view()
		n.health.recordGossip(st.members.Nodes, view, time.Now())
		for _, m := range st.members.Nodes {
			if v, ok := view[m.ID]; ok && m.ID != n.id && (v.meta.RESP != m.RESPAddr() || v.meta.Bus != m.Bus) {
				if host, port, err := splitHostPort(v.meta.RESP); err == nil && v.meta.Bus != "" {
					n.observeMember(Member{ID: m.ID, Host: host, Port: port, Bus: v.meta.Bus, Gossip: m.Gossip})
				}
			}
		}
		n.noteCoLocated(coLocated(n.id, n.hostHash, st.members, view))
		n.fetchNewerMembership(g, st.members)
		if g.ml.NumMembers() < len(st.members.Nodes) && time.Since(lastJoin) >= 2*time.Second {
			lastJoin = time.Now()
			n.gossipJoin(g, st.members)
		}
	}
}

// coLocated counts the members of m that gossip sees alive with host
// hash host, the node self included ("" counts self alone).
func coLocated(self, host string, m *Membership, view map[string]gossipView) int {
	n := 1
	if host == "" {
		return n
	}
	for _, mb := range m.Nodes {
		if v, ok := view[mb.ID]; ok && mb.ID != self && v.meta.Host == host {
			n++
		}
	}
	return n
}

// noteCoLocated records the co-located count and tells OnCoLocated when
// it changed.
func (n *Node) noteCoLocated(c int) {
	if int(n.colocated.Swap(int32(c))) != c && n.cfg.OnCoLocated != nil {
		n.cfg.OnCoLocated(c)
	}
}

// CoLocated is how many members of the cluster run on this node's host
// (Config.HostID), this node included, as gossip last saw them alive: 1
// without gossip or a host ID.
func (n *Node) CoLocated() int {
	return max(1, int(n.colocated.Load()))
}

// hostHash is what gossip carries of a host ID: short, and not the ID
// itself.
func hostHash(id string) string {
	if id == "" {
		return ""
	}
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:6])
}

// setMeta stores b as this node's metadata; it reports whether b is what
// was published already.
func (g *gossip) setMeta(b []byte) (same bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if string(b) == string(g.meta) {
		return true
	}
	g.meta = b
	return false
}

// view is memberlist's current view: the members alive (memberlist
// reports a member dead only after its suspicion timed out), with their
// metadata.
func (g *gossip) view() map[string]gossipView {
	g.vmu.Lock()
	defer g.vmu.Unlock()
	out := make(map[string]gossipView, len(g.members))
	for id, m := range g.members {
		out[id] = gossipView{id: id, meta: m}
	}
	return out
}

// gossipJoin joins the members' gossip addresses: their own gossip port,
// or, on the bus, their bus address.
func (n *Node) gossipJoin(g *gossip, m *Membership) {
	var addrs []string
	for _, mb := range m.Nodes {
		switch {
		case mb.ID == n.id:
		case mb.Gossip != "":
			addrs = append(addrs, mb.Gossip)
		case g.mode == "bus":
			addrs = append(addrs, mb.Bus)
		}
	}
	if len(addrs) > 0 {
		_, _ = g.ml.Join(addrs)
	}
}

// fetchNewerMembership asks the member reporting the newest controller
// Membership for it, when that is newer than the one adopted here (one
// request at a time, in the background).
func (n *Node) fetchNewerMembership(g *gossip, cur *Membership) {
	id, _ := n.health.newestCtrl(cur.Ctrl)
	mb, ok := cur.Node(id)
	if id == "" || !ok || !g.fetching.CompareAndSwap(false, true) {
		return
	}
	n.goFunc(func() {
		defer g.fetching.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if res, err := n.call(ctx, mb.Bus, rpcRequest{Op: "status", From: n.self, Ctrl: cur.Ctrl}); err == nil && res.Members != nil {
			n.adopt(res.Members)
		}
	})
}

// GossipMembers returns the members memberlist currently sees alive, with
// their metadata (nil without gossip).
func (n *Node) GossipMembers() map[string]gossipMeta {
	g := n.gossip.Load()
	if g == nil {
		return nil
	}
	out := map[string]gossipMeta{}
	for id, v := range g.view() {
		out[id] = v.meta
	}
	return out
}

// stopGossip leaves the gossip cluster (bounded) and shuts memberlist down.
func (n *Node) stopGossip() {
	if g := n.gossip.Load(); g != nil {
		g.stop(true)
	}
}

// stop shuts memberlist down once, announcing the leave first if leave.
func (g *gossip) stop(leave bool) {
	g.once.Do(func() {
		if leave {
			// Leave returns once the leave message has been dequeued for
			// its last retransmission (see RetransmitMult in startGossip);
			// the bound only matters on a starved machine, where one
			// second was seen to expire first and peers then learned of
			// the departure only through failure detection.
			_ = g.ml.Leave(3 * time.Second)
		}
		_ = g.ml.Shutdown()
	})
}
