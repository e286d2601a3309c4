package cluster

import (
	"fmt"
	"strconv"

	"github.com/raftstream/raftstream/fsm"
)

// What a node reports to the admin server: its /metrics series and its
// readiness (/readyz). Both read atomics and Raft's accessors only, so they
// never wait on apply or on Raft.

// MetricWriter receives the series a node reports (in cmd, the admin
// server's Scrape). Labels are name, value pairs; a histogram is its
// bounds, per-bucket counts (not cumulative), count and sum. Series of one
// family must be written with the same help text. Called from the scraping
// goroutine only; must not block.
type MetricWriter interface {
	Gauge(name, help string, v float64, labels ...string)
	Counter(name, help string, v float64, labels ...string)
	Histogram(name, help string, bounds []float64, counts []uint64, count uint64, sum float64, labels ...string)
}

// CollectMetrics writes the node's series: cluster members, the shared
// node log, and the Raft state and counters of every local shard replica.
func (n *Node) CollectMetrics(w MetricWriter) {
	top := n.Topology()
	up := 0
	for _, m := range top.Nodes {
		if m.Up {
			up++
		}
	}
	w.Gauge("raftstream_cluster_nodes", "Cluster members known to this node, by state.", float64(up), "state", "up")
	w.Gauge("raftstream_cluster_nodes", "Cluster members known to this node, by state.", float64(len(top.Nodes)-up), "state", "down")
	w.Gauge("raftstream_cluster_shards", "Shards (Raft groups) in the cluster.", float64(n.NumShards()))
	ns := n.NodeLogStats()
	w.Counter("raftstream_node_log_writes_total", "Writes of the node's shared Raft log (each one write and one fdatasync for every shard's queued entries).", float64(ns.Batches))
	w.Counter("raftstream_node_log_requests_total", "Shard requests (appends, truncations) committed by those writes.", float64(ns.Ops))
	w.Counter("raftstream_node_log_written_bytes_total", "Bytes written to the node log.", float64(ns.Bytes))
	w.Counter("raftstream_node_log_write_seconds_total", "Time spent in node log writes and their fdatasyncs.", ns.WriteTime.Seconds())
	w.Gauge("raftstream_node_log_segments", "Segment files of the node log.", float64(ns.Segments))
	collectBus(w, n.BusStats())
	for i := 0; i < n.NumShards(); i++ {
		if ls := n.shard(i); ls != nil {
			collectShard(w, i, ls)
		}
	}
}

// collectBus writes the node's cluster bus counters and its view of the
// controller group (busstats.go).
func collectBus(w MetricWriter, s BusStats) {
	const reqHelp = "Requests this node sent on the cluster bus, by kind (raft: Raft RPCs, heartbeats included; rpc: node-to-node RPCs; gossip_packet, gossip_stream: memberlist)."
	w.Counter("raftstream_bus_requests_total", reqHelp, float64(s.RaftRequests), "kind", "raft")
	w.Counter("raftstream_bus_requests_total", reqHelp, float64(s.RPCRequests), "kind", "rpc")
	w.Counter("raftstream_bus_requests_total", reqHelp, float64(s.GossipPackets), "kind", "gossip_packet")
	w.Counter("raftstream_bus_requests_total", reqHelp, float64(s.GossipStreams), "kind", "gossip_stream")
	const byteHelp = "Bytes this node sent and received on the cluster bus (TCP and gossip UDP)."
	w.Counter("raftstream_bus_bytes_total", byteHelp, float64(s.BytesSent), "dir", "sent")
	w.Counter("raftstream_bus_bytes_total", byteHelp, float64(s.BytesReceived), "dir", "received")
	rb := s.RaftBus
	w.Counter("raftstream_raft_append_requests_total", "AppendEntries requests the node's shard groups sent as leaders, heartbeats included.", float64(rb.AppendRPCs))
	w.Counter("raftstream_raft_heartbeats_total", "Heartbeats among those requests.", float64(rb.Heartbeats))
	w.Counter("raftstream_raft_bus_written_bytes_total", "Bytes written on the raft bus (AppendEntries of every shard group, requests and answers).", float64(rb.BytesSent))
	w.Counter("raftstream_raft_bus_writes_total", "Socket writes on the raft bus (each carries every frame queued meanwhile).", float64(rb.Writes))
	w.Counter("raftstream_raft_bus_fallbacks_total", "AppendEntries sent over a group's own transport because the peer does not accept the raft bus.", float64(rb.Fallbacks))
	w.Counter("raftstream_raft_bus_busy_total", "AppendEntries refused because the shard group's raft goroutine was 64 requests behind.", float64(rb.Busy))
	w.Counter("raftstream_raft_bus_early_sent_total", "AppendEntries a shard leader sent early: its new entries, to a caught-up follower, while it writes them itself.", float64(rb.Early))
	w.Counter("raftstream_raft_bus_early_failed_total", "Early AppendEntries not answered with success; early sends to that follower stop until raft's own replication succeeds again.", float64(rb.EarlyFailed))
	w.Counter("raftstream_raft_bus_early_answered_total", "Raft's own AppendEntries not sent because an early one had carried the same entries and succeeded.", float64(rb.EarlyAnswered))
	w.Counter("raftstream_bus_status_polls_total", "Status polls sent to members gossip does not cover.", float64(s.StatusPolls))
	w.Gauge("raftstream_gossip_members", "Members memberlist sees alive (0 without gossip).", float64(s.GossipMembers))
	w.Gauge("raftstream_controller_voters", "Voters of the controller group in this node's replica's configuration (0 without a replica).", float64(len(s.CtrlVoters)))
	w.Gauge("raftstream_controller_leader", "1 when this node leads the controller group.", b2f(s.CtrlRole == "leader"))
}

// collectShard writes the series of the local replica ls of shard i.
func collectShard(w MetricWriter, i int, ls *localShard) {
	st := shardStatus(ls)
	sh := strconv.Itoa(i)
	for _, role := range []string{"leader", "follower", "candidate"} {
		w.Gauge("raftstream_shard_role", "1 for the local replica's current Raft role.", b2f(st.Role == role), "shard", sh, "role", role)
	}
	w.Gauge("raftstream_shard_has_leader", "1 when the local replica knows a leader for the shard.", b2f(st.Leader != ""), "shard", sh)
	w.Gauge("raftstream_shard_term", "Current Raft term of the local replica.", float64(st.Term), "shard", sh)
	w.Gauge("raftstream_shard_commit_index", "Raft commit index known to the local replica.", float64(st.CommitIndex), "shard", sh)
	w.Gauge("raftstream_shard_applied_index", "Raft index applied to the local engine.", float64(st.AppliedIndex), "shard", sh)
	w.Gauge("raftstream_shard_last_index", "Last Raft log index stored locally.", float64(st.LastIndex), "shard", sh)
	lag := float64(0)
	if st.CommitIndex > st.AppliedIndex {
		lag = float64(st.CommitIndex - st.AppliedIndex)
	}
	w.Gauge("raftstream_shard_apply_lag", "Committed entries not yet applied locally (commit index - applied index).", lag, "shard", sh)
	fs := ls.s.Stats()
	w.Gauge("raftstream_shard_proposals_queued", "Proposals and read fences waiting for the batcher.", float64(fs.Queued), "shard", sh)
	w.Gauge("raftstream_shard_entries_in_flight", "Entries proposed to Raft and not yet applied (leader).", float64(fs.InFlight), "shard", sh)
	w.Counter("raftstream_shard_proposals_rejected_total", "Submissions refused because the proposal queue was full (TRYAGAIN).", float64(fs.Rejected), "shard", sh)
	w.Counter("raftstream_shard_entries_proposed_total", "Log entries proposed by this replica as leader.", float64(fs.Entries), "shard", sh)
	w.Counter("raftstream_shard_leader_changes_total", "Leader changes observed by this replica (elections, transfers, leader loss).", float64(fs.LeaderChanges), "shard", sh)
	w.Counter("raftstream_shard_snapshots_total", "Snapshots taken by this replica.", float64(fs.Snapshots), "shard", sh)
	w.Gauge("raftstream_shard_snapshot_bytes", "Size of the newest local snapshot.", float64(fs.LastSnapshotBytes), "shard", sh)
	w.Gauge("raftstream_shard_node_log_segments_held", "Node log segments, besides the one being written, that the local replica's Raft log keeps from being deleted (its first entry is in the oldest).", float64(fs.NodeLogSegmentsHeld), "shard", sh)
	w.Gauge("raftstream_shard_storage_fault", "1 when the local replica stopped because its Raft log store failed a write (disk error); restart the node once the disk is fixed.", b2f(fs.StorageFault != ""), "shard", sh)
	writeHist(w, "raftstream_shard_batch_commands", "Commands per proposed log entry.", fs.BatchCommands, "shard", sh)
	writeHist(w, "raftstream_shard_commit_seconds", "Time from proposing an entry to its applied result on the leader (replication, quorum fsync, apply).", fs.CommitSeconds, "shard", sh)
	writeHist(w, "raftstream_shard_snapshot_seconds", "Duration of snapshots.", fs.SnapshotSeconds, "shard", sh)
}

func writeHist(w MetricWriter, name, help string, h fsm.HistSnapshot, labels ...string) {
	w.Histogram(name, help, h.Bounds, h.Counts, h.Count, h.Sum, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// DefaultReadyMaxLag is Ready's bound on a replica's unapplied committed
// entries when it is given 0.
const DefaultReadyMaxLag = 1000

// Ready reports whether every local shard replica knows a leader, has
// applied all but maxLag of its committed entries (0 = DefaultReadyMaxLag)
// and has a working log store, and why not: the answer of /readyz.
func (n *Node) Ready(maxLag uint64) (bool, string) {
	var local []replicaState
	for i := 0; i < n.NumShards(); i++ {
		ls := n.shard(i)
		if ls == nil {
			continue
		}
		r := replicaState{shard: i, status: shardStatus(ls)}
		if err := ls.s.StorageFault(); err != nil {
			r.fault = err.Error()
		}
		local = append(local, r)
	}
	return readiness(local, maxLag)
}

// replicaState is what readiness needs of one local shard replica.
type replicaState struct {
	shard  int
	status ShardStatus
	fault  string // the storage fault that stopped it, "" while healthy
}

// readiness decides Ready from the local replicas in shard order: the first
// one that is not ready gives the reason.
func readiness(local []replicaState, maxLag uint64) (bool, string) {
	if maxLag == 0 {
		maxLag = DefaultReadyMaxLag
	}
	for _, r := range local {
		st := r.status
		if r.fault != "" {
			return false, r.fault
		}
		if st.Leader == "" || st.Role == "candidate" || st.Role == "shutdown" {
			return false, fmt.Sprintf("shard %d has no leader (role %s, term %d)", r.shard, st.Role, st.Term)
		}
		if st.CommitIndex > st.AppliedIndex+maxLag {
			return false, fmt.Sprintf("shard %d is catching up: applied %d of %d", r.shard, st.AppliedIndex, st.CommitIndex)
		}
	}
	if len(local) == 0 {
		return false, "no shard replicas hosted yet"
	}
	return true, fmt.Sprintf("%d local shard replicas have a leader and are caught up", len(local))
}
