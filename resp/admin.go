package resp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/fsm/nodelog"
)

// The admin HTTP server: /metrics (Prometheus text format), /healthz,
// /readyz and, behind AdminConfig.Pprof, /debug/pprof/. It reads only
// atomics, Raft's own accessors and (for per-stream series) the local
// engines through StaleRead in short chunks, so a scrape never holds up
// apply for long and never waits on Raft.

// AdminBackend is what the admin server and the RAFTSTREAM command need
// beyond Backend (implemented by cluster.Node). A backend without it serves
// /metrics without the per-shard counters, and RAFTSTREAM actions fail.
type AdminBackend interface {
	// ShardStats reports the local replica's counters; false if the shard
	// is not hosted here. Must not block.
	ShardStats(shard int) (fsm.Stats, bool)
	// TransferLeader moves leadership of a shard this node leads to node
	// to ("" = any up-to-date voter), waiting for it (bounded by ctx).
	TransferLeader(ctx context.Context, shard int, to string) error
	// SnapshotShard snapshots the local replica of shard now.
	SnapshotShard(shard int) error
}

// NodeLogBackend is implemented by backends whose shards keep their Raft
// logs in one node log (fsm/nodelog); INFO persistence and /metrics report
// its writes.
type NodeLogBackend interface {
	NodeLogStats() nodelog.Stats
}

// AdminConfig configures the admin HTTP server.
type AdminConfig struct {
	// Pprof mounts net/http/pprof under /debug/pprof/.
	Pprof bool
	// MetricsStreams > 0 exports per-stream length and per-group lag and
	// PEL size for the MetricsStreams longest streams of each local shard
	// (replicas included). 0 exports none.
	MetricsStreams int
	// ReadyMaxLag is how many committed entries a replica may still have to
	// apply and count as caught up for /readyz. Default 1000.
	ReadyMaxLag uint64
}

// Admin serves the admin endpoints of one node.
type Admin struct {
	be  Backend
	srv atomic.Pointer[Server] // nil until SetServer: no client or command series
	cfg AdminConfig
	mux *http.ServeMux
}

// SetServer attaches the RESP server whose clients and commands /metrics
// reports (the admin server may start before it, to answer /healthz).
func (a *Admin) SetServer(srv *Server) { a.srv.Store(srv) }

// NewAdmin returns the admin handler for be and srv (which may be nil).
func NewAdmin(be Backend, srv *Server, cfg AdminConfig) *Admin {
	if cfg.ReadyMaxLag == 0 {
		cfg.ReadyMaxLag = 1000
	}
	a := &Admin{be: be, cfg: cfg, mux: http.NewServeMux()}
	a.srv.Store(srv)
	a.mux.HandleFunc("/metrics", a.serveMetrics)
	a.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	a.mux.HandleFunc("/readyz", a.serveReady)
	if cfg.Pprof {
		a.mux.HandleFunc("/debug/pprof/", pprof.Index)
		a.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		a.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		a.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		a.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return a
}

// ServeHTTP implements http.Handler.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// ListenAndServe serves the admin endpoints on addr until ctx ends. It
// returns once the listener is open (or failed); the server runs in the
// background and is shut down when ctx is done.
func (a *Admin) ListenAndServe(ctx context.Context, addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: a, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}

// Ready reports whether the RESP server is attached (SetServer) and every
// local shard replica knows a leader and has applied all but ReadyMaxLag of
// its committed entries, and why not.
func (a *Admin) Ready() (bool, string) {
	if a.srv.Load() == nil {
		return false, "not serving clients yet (waiting for shard leaders at startup)"
	}
	local := 0
	ab, _ := a.be.(AdminBackend)
	for i := 0; i < a.be.NumShards(); i++ {
		st, ok := a.be.ShardStatus(i)
		if !ok {
			continue
		}
		local++
		if ab != nil {
			if fs, ok := ab.ShardStats(i); ok && fs.StorageFault != "" {
				return false, fs.StorageFault
			}
		}
		if st.Leader == "" || st.Role == "candidate" || st.Role == "shutdown" {
			return false, fmt.Sprintf("shard %d has no leader (role %s, term %d)", i, st.Role, st.Term)
		}
		if st.CommitIndex > st.AppliedIndex+a.cfg.ReadyMaxLag {
			return false, fmt.Sprintf("shard %d is catching up: applied %d of %d", i, st.AppliedIndex, st.CommitIndex)
		}
	}
	if local == 0 {
		return false, "no shard replicas hosted yet"
	}
	return true, fmt.Sprintf("%d local shard replicas have a leader and are caught up", local)
}

func (a *Admin) serveReady(w http.ResponseWriter, r *http.Request) {
	ok, why := a.Ready()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, why)
}

func (a *Admin) serveMetrics(w http.ResponseWriter, r *http.Request) {
	sc := NewScrape()
	a.Collect(sc)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = sc.WriteTo(w)
}

// Collect adds every series to sc.
func (a *Admin) Collect(sc *Scrape) {
	ready, _ := a.Ready()
	sc.Add("raftstream_ready", "1 when /readyz would answer 200.", Gauge, b2f(ready))
	top := a.be.Topology()
	up := 0
	for _, n := range top.Nodes {
		if n.Up {
			up++
		}
	}
	sc.Add("raftstream_cluster_nodes", "Cluster members known to this node, by state.", Gauge, float64(up), Label{"state", "up"})
	sc.Add("raftstream_cluster_nodes", "Cluster members known to this node, by state.", Gauge, float64(len(top.Nodes)-up), Label{"state", "down"})
	sc.Add("raftstream_cluster_shards", "Shards (Raft groups) in the cluster.", Gauge, float64(a.be.NumShards()))
	if nb, ok := a.be.(NodeLogBackend); ok {
		ns := nb.NodeLogStats()
		sc.Add("raftstream_node_log_writes_total", "Writes of the node's shared Raft log (each one write and one fdatasync for every shard's queued entries).", Counter, float64(ns.Batches))
		sc.Add("raftstream_node_log_requests_total", "Shard requests (appends, truncations) committed by those writes.", Counter, float64(ns.Ops))
		sc.Add("raftstream_node_log_written_bytes_total", "Bytes written to the node log.", Counter, float64(ns.Bytes))
		sc.Add("raftstream_node_log_write_seconds_total", "Time spent in node log writes and their fdatasyncs.", Counter, ns.WriteTime.Seconds())
		sc.Add("raftstream_node_log_segments", "Segment files of the node log.", Gauge, float64(ns.Segments))
	}
	ab, _ := a.be.(AdminBackend)
	for i := 0; i < a.be.NumShards(); i++ {
		st, ok := a.be.ShardStatus(i)
		if !ok {
			continue
		}
		a.collectShard(sc, i, st, ab)
	}
	if s := a.srv.Load(); s != nil {
		s.mu.Lock()
		nc := len(s.clients)
		s.mu.Unlock()
		sc.Add("raftstream_clients_connected", "Client connections open.", Gauge, float64(nc))
		sc.Add("raftstream_clients_blocked", "Clients waiting in a blocking read (XREAD/XREADGROUP BLOCK).", Gauge, float64(s.nBlocked.Load()))
		sc.Add("raftstream_connections_total", "Client connections accepted.", Counter, float64(s.stats.connections.Load()))
		const bufHelp = "Client connections closed for passing a buffer limit (client-query-buffer-limit, client-output-buffer-limit)."
		sc.Add("raftstream_client_buffer_limit_disconnections_total", bufHelp, Counter, float64(s.buf.queryDrops.Load()), Label{"buffer", "query"})
		sc.Add("raftstream_client_buffer_limit_disconnections_total", bufHelp, Counter, float64(s.buf.outDrops.Load()), Label{"buffer", "output"})
		s.cmdm.collect(sc)
	}
	if a.cfg.MetricsStreams > 0 {
		a.collectStreams(sc)
	}
}

func (a *Admin) collectShard(sc *Scrape, i int, st cluster.ShardStatus, ab AdminBackend) {
	sh := Label{"shard", strconv.Itoa(i)}
	for _, role := range []string{"leader", "follower", "candidate"} {
		sc.Add("raftstream_shard_role", "1 for the local replica's current Raft role.", Gauge, b2f(st.Role == role), sh, Label{"role", role})
	}
	sc.Add("raftstream_shard_has_leader", "1 when the local replica knows a leader for the shard.", Gauge, b2f(st.Leader != ""), sh)
	sc.Add("raftstream_shard_term", "Current Raft term of the local replica.", Gauge, float64(st.Term), sh)
	sc.Add("raftstream_shard_commit_index", "Raft commit index known to the local replica.", Gauge, float64(st.CommitIndex), sh)
	sc.Add("raftstream_shard_applied_index", "Raft index applied to the local engine.", Gauge, float64(st.AppliedIndex), sh)
	sc.Add("raftstream_shard_last_index", "Last Raft log index stored locally.", Gauge, float64(st.LastIndex), sh)
	lag := float64(0)
	if st.CommitIndex > st.AppliedIndex {
		lag = float64(st.CommitIndex - st.AppliedIndex)
	}
	sc.Add("raftstream_shard_apply_lag", "Committed entries not yet applied locally (commit index - applied index).", Gauge, lag, sh)
	if ab == nil {
		return
	}
	fs, ok := ab.ShardStats(i)
	if !ok {
		return
	}
	sc.Add("raftstream_shard_proposals_queued", "Proposals and read fences waiting for the batcher.", Gauge, float64(fs.Queued), sh)
	sc.Add("raftstream_shard_entries_in_flight", "Entries proposed to Raft and not yet applied (leader).", Gauge, float64(fs.InFlight), sh)
	sc.Add("raftstream_shard_proposals_rejected_total", "Submissions refused because the proposal queue was full (TRYAGAIN).", Counter, float64(fs.Rejected), sh)
	sc.Add("raftstream_shard_entries_proposed_total", "Log entries proposed by this replica as leader.", Counter, float64(fs.Entries), sh)
	sc.Add("raftstream_shard_leader_changes_total", "Leader changes observed by this replica (elections, transfers, leader loss).", Counter, float64(fs.LeaderChanges), sh)
	sc.Add("raftstream_shard_snapshots_total", "Snapshots taken by this replica.", Counter, float64(fs.Snapshots), sh)
	sc.Add("raftstream_shard_snapshot_bytes", "Size of the newest local snapshot.", Gauge, float64(fs.LastSnapshotBytes), sh)
	sc.Add("raftstream_shard_node_log_segments_held", "Node log segments, besides the one being written, that the local replica's Raft log keeps from being deleted (its first entry is in the oldest).", Gauge, float64(fs.NodeLogSegmentsHeld), sh)
	sc.Add("raftstream_shard_storage_fault", "1 when the local replica stopped because its Raft log store failed a write (disk error); restart the node once the disk is fixed.", Gauge, b2f(fs.StorageFault != ""), sh)
	sc.Histogram("raftstream_shard_batch_commands", "Commands per proposed log entry.", histValue(fs.BatchCommands), sh)
	sc.Histogram("raftstream_shard_commit_seconds", "Time from proposing an entry to its applied result on the leader (replication, quorum fsync, apply).", histValue(fs.CommitSeconds), sh)
	sc.Histogram("raftstream_shard_snapshot_seconds", "Duration of snapshots.", histValue(fs.SnapshotSeconds), sh)
}

func histValue(h fsm.HistSnapshot) HistogramValue {
	return HistogramValue{Bounds: h.Bounds, Counts: h.Counts, Count: h.Count, Sum: h.Sum}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
