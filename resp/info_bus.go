package resp

import (
	"fmt"
	"strings"

	"github.com/raftstream/raftstream/cluster"
)

// busReporter is what INFO bus needs of a backend that runs on a cluster
// bus (cluster.Node); a backend without one has an empty section.
type busReporter interface {
	BusStats() cluster.BusStats
}

// infoBus writes INFO's "bus" section (ours): the node's background
// traffic on the cluster bus (totals since start; rates are differences
// over time) and its view of the controller group.
func (s *Server) infoBus(b *strings.Builder) {
	b.WriteString("# Bus\r\n")
	br, ok := s.be.(busReporter)
	if !ok {
		return
	}
	st := br.BusStats()
	w := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	w("bus_requests_sent", st.Requests())
	w("bus_raft_requests_sent", st.RaftRequests)
	w("bus_rpc_requests_sent", st.RPCRequests)
	w("bus_gossip_packets_sent", st.GossipPackets)
	w("bus_gossip_streams_opened", st.GossipStreams)
	w("bus_status_polls_sent", st.StatusPolls)
	w("bus_bytes_sent", st.BytesSent)
	w("bus_bytes_received", st.BytesReceived)
	w("gossip", st.Gossip)
	w("gossip_members", st.GossipMembers)
	w("controller_role", st.CtrlRole)
	w("controller_leader", st.CtrlLeaderID)
	w("controller_voters", strings.Join(st.CtrlVoters, ","))
	w("controller_nonvoters", strings.Join(st.CtrlNonvoters, ","))
	w("controller_epoch", st.CtrlMembership)
}
