package cluster

import (
	"net"
	"strings"
	"sync/atomic"
)

// Background traffic on the cluster bus, counted by the node (INFO bus,
// /metrics): how many requests it sends, by kind, and how many bytes it
// sends and receives on bus connections (TCP, TLS included) and gossip
// datagrams (UDP). A request is one message that asks something of a peer:
// a Raft RPC (AppendEntries, heartbeats included; votes; snapshots), an rpc
// group exchange (rpc.go), a gossip datagram, or a gossip stream
// (memberlist's push-pull and TCP probes).
type busStats struct {
	raftReqs, rpcReqs, gossipPackets, gossipStreams atomic.Uint64
	sent, received                                  atomic.Uint64
}

// BusStats is a snapshot of a node's bus counters (totals since start).
type BusStats struct {
	RaftRequests   uint64 // Raft RPCs sent, heartbeats included
	RPCRequests    uint64 // rpc group requests sent (status, hello, join, confs…)
	GossipPackets  uint64 // gossip datagrams sent
	GossipStreams  uint64 // gossip streams opened
	BytesSent      uint64 // bus bytes written (TCP and UDP)
	BytesReceived  uint64 // bus bytes read (TCP and UDP)
	Gossip         string // "bus", "own port" or "off"
	GossipMembers  int    // members memberlist sees alive (0 without gossip)
	StatusPolls    uint64 // status polls sent (members gossip does not cover)
	CtrlVoters     []string
	CtrlNonvoters  []string
	CtrlRole       string // this node's controller replica: leader, follower, candidate, "" (none)
	CtrlLeaderID   string
	CtrlMembership uint64 // Epoch of the controller Membership this node last adopted
	// RaftBus counts the shard groups' AppendEntries and the raft bus
	// that carries them (raftbus.go).
	RaftBus RaftBusStats
}

// Requests is every request the node sent on the bus.
func (s BusStats) Requests() uint64 {
	return s.RaftRequests + s.RPCRequests + s.GossipPackets + s.GossipStreams
}

// BusStats reports the node's bus counters and its view of the controller
// group. It never waits on Raft.
func (n *Node) BusStats() BusStats {
	s := BusStats{
		RaftRequests: n.bus.raftReqs.Load(), RPCRequests: n.bus.rpcReqs.Load(),
		GossipPackets: n.bus.gossipPackets.Load(), GossipStreams: n.bus.gossipStreams.Load(),
		BytesSent: n.bus.sent.Load(), BytesReceived: n.bus.received.Load(),
		StatusPolls: n.health.polls.Load(), Gossip: "off", RaftBus: n.raftBus.Stats(),
	}
	if g := n.gossip.Load(); g != nil {
		s.Gossip = g.mode
		s.GossipMembers = len(g.view())
	}
	if st := n.st.Load(); st.members != nil {
		s.CtrlMembership = st.members.Ctrl
	}
	if c := n.ctrl.Load(); c != nil {
		s.CtrlRole = strings.ToLower(c.r.State().String())
		_, id := c.r.LeaderWithID()
		s.CtrlLeaderID = string(id)
		s.CtrlVoters, s.CtrlNonvoters, _ = n.ctrlConfig()
	}
	return s
}

// countedConn counts the bytes of one bus connection into stats.
type countedConn struct {
	net.Conn
	stats *busStats
}

func (c countedConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.stats.received.Add(uint64(k))
	return k, err
}

func (c countedConn) Write(p []byte) (int, error) {
	k, err := c.Conn.Write(p)
	c.stats.sent.Add(uint64(k))
	return k, err
}
