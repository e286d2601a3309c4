package cluster

import (
	"encoding/json"
	"io"
	"log"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Gossip (hashicorp/memberlist) complements the health polls with fast
// failure detection and node metadata. It is never used for a safety
// decision: Raft decides leadership and the controller decides topology;
// gossip only marks a member down in Topology and for the balancer sooner
// than three missed polls would.
//
// Each node runs one memberlist on Config.GossipAddr (TCP and UDP, the same
// port advertised), named by its node ID, with Label Config.GossipLabel so
// two clusters on one network never merge. Its metadata (≤ 512 bytes) is
// {"resp": host:port, "bus": host:port}. Callbacks only update a map under
// a mutex: they never block memberlist.
type gossip struct {
	ml   *memberlist.Memberlist
	once sync.Once
	mu   sync.Mutex
	// dead[id] is true once memberlist reported the member left or failed,
	// false once it (re)joined.
	dead map[string]bool
}

type gossipMeta struct {
	RESP string `json:"resp"`
	Bus  string `json:"bus"`
}

// gossipDelegate implements memberlist.Delegate (metadata only) and
// memberlist.EventDelegate.
type gossipDelegate struct {
	g    *gossip
	meta []byte
}

func (d *gossipDelegate) NodeMeta(limit int) []byte {
	if len(d.meta) > limit {
		return nil
	}
	return d.meta
}
func (d *gossipDelegate) NotifyMsg([]byte)                {}
func (d *gossipDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d *gossipDelegate) LocalState(bool) []byte          { return nil }
func (d *gossipDelegate) MergeRemoteState([]byte, bool)   {}

func (d *gossipDelegate) set(name string, dead bool) {
	d.g.mu.Lock()
	d.g.dead[name] = dead
	d.g.mu.Unlock()
}
func (d *gossipDelegate) NotifyJoin(n *memberlist.Node)   { d.set(n.Name, false) }
func (d *gossipDelegate) NotifyLeave(n *memberlist.Node)  { d.set(n.Name, true) }
func (d *gossipDelegate) NotifyUpdate(n *memberlist.Node) { d.set(n.Name, false) }

// startGossip creates this node's memberlist (no-op without GossipAddr).
func (n *Node) startGossip() error {
	if n.cfg.GossipAddr == "" {
		return nil
	}
	host, port, err := splitHostPort(n.cfg.GossipAddr)
	if err != nil {
		return err
	}
	g := &gossip{dead: make(map[string]bool)}
	meta, _ := json.Marshal(gossipMeta{RESP: n.self.RESPAddr(), Bus: n.self.Bus})
	d := &gossipDelegate{g: g, meta: meta}
	c := memberlist.DefaultLocalConfig()
	// Each broadcast goes out RetransmitMult*ceil(log10(nodes+1)) times,
	// and Leave returns once the last of those is dequeued, before it is
	// sent. With the local default of 2 and three nodes, one of which was
	// recently failed (gossip still reaches failed nodes for a while), the
	// only copy for the live peer could be that last one, lost to
	// Shutdown closing the socket. LAN's 4 makes it two gossip rounds, so
	// each live peer gets a copy sent in full before Leave returns.
	c.RetransmitMult = 4
	c.Name = n.id
	c.BindAddr, c.BindPort = host, port
	c.AdvertiseAddr, c.AdvertisePort = host, port
	c.Label = n.cfg.GossipLabel
	c.SecretKey = n.cfg.GossipKey // nil: plaintext gossip
	c.Delegate, c.Events = d, d
	c.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(c)
	if err != nil {
		return err
	}
	g.ml = ml
	n.gossip.Store(g)
	n.goFunc(n.gossipJoinLoop)
	return nil
}

// gossipJoinLoop (re)joins the members' gossip addresses while some known
// member is missing from the memberlist view, every 2 s.
func (n *Node) gossipJoinLoop() {
	g := n.gossip.Load()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		st := n.st.Load()
		if st.members != nil && g.ml.NumMembers() < len(st.members.Nodes) {
			var addrs []string
			for _, m := range st.members.Nodes {
				if m.ID != n.id && m.Gossip != "" {
					addrs = append(addrs, m.Gossip)
				}
			}
			if len(addrs) > 0 {
				_, _ = g.ml.Join(addrs)
			}
		}
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
	}
}

// gossipDead reports whether gossip says member id left or failed.
func (n *Node) gossipDead(id string) bool {
	if n == nil {
		return false
	}
	g := n.gossip.Load()
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dead[id]
}

// GossipMembers returns the node IDs memberlist currently sees alive
// (nil without gossip).
func (n *Node) GossipMembers() map[string]gossipMeta {
	g := n.gossip.Load()
	if g == nil {
		return nil
	}
	out := map[string]gossipMeta{}
	for _, m := range g.ml.Members() {
		var gm gossipMeta
		_ = json.Unmarshal(m.Meta, &gm)
		out[m.Name] = gm
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
