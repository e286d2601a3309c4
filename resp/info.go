package resp

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// INFO, with Redis 7's sections, field names and formats, plus "raft".
// Where Redis reports something raftstream does differently, the field says
// what raftstream does: persistence is the Raft log (an AOF fsynced before
// every acknowledgement) and Raft snapshots (in the role of RDB saves);
// replication is per shard (a node leads some shards and follows others).

// infoSections are INFO's sections in Redis's order; "raft" and "bus" are
// ours.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
	"commandstats", "errorstats", "latencystats", "cluster", "keyspace", "raft", "bus"}

// infoDefault are the sections of INFO and INFO default: all but
// commandstats and latencystats, as Redis.
var infoDefault = map[string]bool{"server": true, "clients": true, "memory": true, "persistence": true, "stats": true,
	"replication": true, "cpu": true, "modules": true, "errorstats": true, "cluster": true, "keyspace": true, "raft": true, "bus": true}

// RaftstreamVersion is raftstream's own version (INFO raftstream_version).
const RaftstreamVersion = "0.1.0"

// Version is the Redis version raftstream reports (HELLO, INFO
// redis_version): the newest Redis release whose stream commands the server
// implements, i.e. the latest "since" of the command table's stream rows
// (XNACK: 8.8.0). Client libraries that enable features by version see the
// stream commands they may use.
var Version = streamVersion()

func streamVersion() string {
	best, bestV := "7.0.0", []int{7, 0, 0}
	for _, c := range command.All() {
		if c.Group != "stream" {
			continue
		}
		if v, ok := parseVersion(c.Since); ok && compareVersions(v, bestV) > 0 {
			best, bestV = c.Since, v
		}
	}
	return best
}

// parseVersion parses "major.minor.patch" (false for "raftstream").
func parseVersion(s string) ([]int, bool) {
	f := strings.Split(s, ".")
	if len(f) != 3 {
		return nil, false
	}
	v := make([]int, 3)
	for i, p := range f {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, false
		}
		v[i] = n
	}
	return v, true
}

func compareVersions(a, b []int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}

// cmdInfo implements INFO [section ...]: the named sections (any case),
// "default" (also no argument), "all" or "everything"; unknown names are
// ignored.
func cmdInfo(s *Server, c *client, argv [][]byte) reply {
	want := map[string]bool{}
	if len(argv) == 1 {
		want = infoDefault
	}
	for _, a := range argv[1:] {
		switch n := strings.ToLower(string(a)); n {
		case "all", "everything":
			for _, sec := range infoSections {
				want[sec] = true
			}
		case "default":
			for sec := range infoDefault {
				want[sec] = true
			}
		default:
			want[n] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !want[sec] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		s.infoSection(c, &b, sec)
	}
	return engine.BulkString(b.String())
}

// infoWriter writes "name:value\r\n" lines.
type infoWriter struct{ b *strings.Builder }

func (w infoWriter) kv(k string, v any) { fmt.Fprintf(w.b, "%s:%v\r\n", k, v) }

func (s *Server) infoSection(c *client, b *strings.Builder, sec string) {
	w := infoWriter{b}
	title := strings.ToUpper(sec[:1]) + sec[1:]
	if sec == "cpu" {
		title = "CPU"
	}
	b.WriteString("# " + title + "\r\n")
	switch sec {
	case "server":
		s.infoServer(w)
	case "clients":
		s.mu.Lock()
		n := len(s.clients)
		s.mu.Unlock()
		w.kv("connected_clients", n)
		w.kv("cluster_connections", 0)
		w.kv("maxclients", s.conns.maxClients.Load())
		w.kv("blocked_clients", s.nBlocked.Load())
		w.kv("tracking_clients", 0)
		w.kv("clients_in_timeout_table", s.nBlocked.Load())
		s.mu.Lock()
		rs := s.rs
		s.mu.Unlock()
		if rs != nil && rs.loop != nil {
			conns, rounds, handoffs, ring := rs.loop.stats()
			w.kv("event_loop_clients", conns)
			w.kv("event_loop_rounds", rounds)
			w.kv("event_loop_handoffs", handoffs)
			w.kv("event_loop_io_uring", boolInt(ring))
		}
	case "memory":
		s.infoMemory(w)
	case "persistence":
		s.infoPersistence(w)
	case "stats":
		_, _, errs := s.cmdm.errorStats()
		w.kv("total_connections_received", s.stats.connections.Load())
		w.kv("total_commands_processed", s.stats.commands.Load())
		w.kv("rejected_connections", s.conns.refused.Load())
		w.kv("expired_keys", 0)
		w.kv("evicted_keys", 0)
		w.kv("evicted_clients", 0)
		w.kv("total_error_replies", errs)
		w.kv("client_query_buffer_limit_disconnections", s.buf.queryDrops.Load())
		w.kv("client_output_buffer_limit_disconnections", s.buf.outDrops.Load())
	case "replication":
		s.infoReplication(w)
	case "cpu":
		sys, user := cpuTimes()
		w.kv("used_cpu_sys", fmt.Sprintf("%.6f", sys))
		w.kv("used_cpu_user", fmt.Sprintf("%.6f", user))
	case "modules":
	case "commandstats":
		for _, st := range s.cmdm.stats() {
			usec := uint64(st.hist.Sum * 1e6)
			perCall := 0.0
			if st.calls > 0 {
				perCall = float64(usec) / float64(st.calls)
			}
			fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				st.name, st.calls, usec, perCall, st.rejected, st.failed)
		}
	case "errorstats":
		codes, counts, _ := s.cmdm.errorStats()
		for i, code := range codes {
			fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", code, counts[i])
		}
	case "latencystats":
		for _, st := range s.cmdm.stats() {
			if st.hist.Count == 0 {
				continue
			}
			us := func(p float64) string { return fmt.Sprintf("%.3f", float64(percentile(st.hist, p))/1e3) }
			fmt.Fprintf(b, "latency_percentiles_usec_%s:p50=%s,p99=%s,p99.9=%s\r\n", st.name, us(0.5), us(0.99), us(0.999))
		}
	case "cluster":
		w.kv("cluster_enabled", boolInt(s.cfg.ClusterMode))
	case "keyspace":
		if ki, er := s.keyspaceInfo(c); er == nil && ki.Keys > 0 {
			fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=%d\r\n", ki.Keys, ki.Expires, ki.AvgTTL)
		}
	case "raft":
		hosted, led := 0, 0
		for sh := 0; sh < s.be.NumShards(); sh++ {
			if st, ok := s.be.ShardStatus(sh); ok {
				hosted++
				if st.Role == "leader" {
					led++
				}
			}
		}
		w.kv("raft_shards", s.be.NumShards())
		w.kv("raft_shards_hosted", hosted)
		w.kv("raft_shards_led", led)
	case "bus":
		s.infoBus(w)
	}
}

func (s *Server) infoServer(w infoWriter) {
	mode := "standalone"
	if s.cfg.ClusterMode {
		mode = "cluster"
	}
	exe, _ := os.Executable()
	up := time.Since(s.started)
	w.kv("redis_version", Version)
	w.kv("redis_git_sha1", "00000000")
	w.kv("redis_git_dirty", 0)
	w.kv("redis_build_id", "0")
	w.kv("redis_mode", mode)
	w.kv("os", runtime.GOOS+" "+runtime.GOARCH)
	w.kv("arch_bits", strconv.IntSize)
	w.kv("process_id", os.Getpid())
	w.kv("process_supervised", "no")
	w.kv("run_id", s.be.Topology().MyID)
	w.kv("tcp_port", s.cfg.Port)
	w.kv("server_time_usec", time.Now().UnixMicro())
	w.kv("uptime_in_seconds", int64(up.Seconds()))
	w.kv("uptime_in_days", int64(up.Hours()/24))
	w.kv("executable", exe)
	w.kv("config_file", "")
	w.kv("raftstream_version", RaftstreamVersion)
	w.kv("go_version", runtime.Version())
	w.kv("go_maxprocs", runtime.GOMAXPROCS(0))
	w.kv("go_godebug", s.cfg.GoDebug)
	w.kv("colocated_nodes", s.be.CoLocated())
}

func (s *Server) infoMemory(w infoWriter) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := processRSS(ms.Sys)
	most := s.mem.max.Load()
	w.kv("used_memory", ms.HeapAlloc)
	w.kv("used_memory_human", humanBytes(ms.HeapAlloc))
	w.kv("used_memory_rss", rss)
	w.kv("used_memory_rss_human", humanBytes(rss))
	w.kv("used_memory_peak", ms.HeapSys)
	w.kv("used_memory_peak_human", humanBytes(ms.HeapSys))
	// As Redis prints them: maxmemory as a signed number.
	w.kv("maxmemory", int64(most))
	w.kv("maxmemory_human", humanBytes(most))
	w.kv("maxmemory_policy", "noeviction")
	w.kv("mem_allocator", "go-"+runtime.Version())
}

// infoPersistence is Redis's persistence section for the local replicas:
// the Raft log is the AOF (every write fsynced before it is acknowledged),
// a Raft snapshot is an RDB save; rdb_* sum or pick over the replicas this
// node hosts. raft_log_* describe the node's shared log; raft_entries_*,
// raft_entry_commands and raft_commit_usec the entries its shard leaders
// proposed.
func (s *Server) infoPersistence(w infoWriter) {
	var changes, saves, proposed, entryCmds, committed uint64
	var commitSecs float64
	var lastSave, lastSecs, curSecs int64 = s.started.Unix(), -1, -1
	status, inProgress, faulted := "ok", 0, ""
	for sh := 0; sh < s.be.NumShards(); sh++ {
		fs, ok := s.be.ShardStats(sh)
		if !ok {
			continue
		}
		proposed += fs.BatchCommands.Count
		entryCmds += uint64(fs.BatchCommands.Sum)
		committed += fs.CommitSeconds.Count
		commitSecs += fs.CommitSeconds.Sum
		sv := fs.Saves
		changes += sv.ChangesSinceSave
		saves += sv.Saves
		if sv.Saves > 0 && sv.LastSave.Unix() > lastSave {
			lastSave = sv.LastSave.Unix()
		}
		if sv.Saves > 0 || sv.LastFailed {
			lastSecs = max(lastSecs, int64(sv.LastDuration.Seconds()))
		}
		if sv.LastFailed {
			status = "err"
		}
		if sv.InProgress {
			inProgress = 1
			curSecs = max(curSecs, int64(time.Since(sv.InProgressSince).Seconds()))
		}
		if fs.StorageFault != "" {
			faulted += "," + strconv.Itoa(sh)
		}
	}
	logStatus := "ok"
	if faulted != "" {
		logStatus = "err"
	}
	ns := s.be.NodeLogStats()
	w.kv("loading", 0)
	w.kv("async_loading", 0)
	// Snapshots are taken in process (copy-on-write listpacks), not by a
	// forked child: no fork, no copy-on-write pages.
	w.kv("current_cow_peak", 0)
	w.kv("current_cow_size", 0)
	w.kv("current_cow_size_age", 0)
	w.kv("current_fork_perc", "0.00")
	w.kv("current_save_keys_processed", 0)
	w.kv("current_save_keys_total", 0)
	w.kv("rdb_changes_since_last_save", changes)
	w.kv("rdb_bgsave_in_progress", inProgress)
	w.kv("rdb_last_save_time", lastSave)
	w.kv("rdb_last_bgsave_status", status)
	w.kv("rdb_last_bgsave_time_sec", lastSecs)
	w.kv("rdb_current_bgsave_time_sec", curSecs)
	w.kv("rdb_saves", saves)
	w.kv("rdb_last_cow_size", 0)
	w.kv("rdb_last_load_keys_expired", 0) // no key expires
	w.kv("aof_enabled", 1)
	w.kv("aof_rewrite_in_progress", 0)
	w.kv("aof_rewrite_scheduled", 0)
	w.kv("aof_last_rewrite_time_sec", -1)
	w.kv("aof_current_rewrite_time_sec", -1)
	w.kv("aof_last_bgrewrite_status", "ok")
	w.kv("aof_rewrites", 0)
	w.kv("aof_rewrites_consecutive_failures", 0)
	// Like Redis's aof_last_write_status: err once a local replica's Raft
	// log store failed a write (that replica stopped).
	w.kv("aof_last_write_status", logStatus)
	w.kv("aof_last_cow_size", 0)
	w.kv("module_fork_in_progress", 0)
	w.kv("module_fork_last_cow_size", 0)
	// Every write is fsynced before it is acknowledged: nothing is
	// buffered or waiting for a background fsync.
	w.kv("aof_pending_rewrite", 0)
	w.kv("aof_buffer_length", 0)
	w.kv("aof_pending_bio_fsync", 0)
	w.kv("aof_delayed_fsync", 0)
	w.kv("raft_log_fsync", 1)
	w.kv("raft_log_last_write_status", logStatus)
	if faulted != "" {
		w.kv("raft_log_failed_shards", faulted[1:])
	}
	w.kv("raft_log_writes", ns.Batches)
	w.kv("raft_log_requests", ns.Ops)
	w.kv("raft_log_written_bytes", ns.Bytes)
	w.kv("raft_log_write_usec", ns.WriteTime.Microseconds())
	w.kv("raft_log_segments", ns.Segments)
	// The log entries this node proposed as a shard leader and the
	// commands they carried; of those, the entries that applied here and
	// their time from proposal to applied result, summed (the log write
	// here, the quorum's AppendEntries and writes, the apply).
	w.kv("raft_entries_proposed", proposed)
	w.kv("raft_entry_commands", entryCmds)
	w.kv("raft_entries_committed", committed)
	w.kv("raft_commit_usec", uint64(commitSecs*1e6))
}

// infoReplication: every node answers as a master (Redis Cluster's view
// of the shards it leads); each local replica has a line with its Raft
// state and the voters and non-voters of its latest configuration, and a
// leader's lists the log index each other member acknowledged storing in
// its term (id@index, ? when none yet).
func (s *Server) infoReplication(w infoWriter) {
	w.kv("role", "master")
	w.kv("connected_slaves", 0)
	for sh := 0; sh < s.be.NumShards(); sh++ {
		st, ok := s.be.ShardStatus(sh)
		if !ok {
			continue
		}
		line := fmt.Sprintf("role=%s,term=%d,commit_index=%d,applied_index=%d,last_index=%d,leader=%s,voters=%s,nonvoters=%s",
			st.Role, st.Term, st.CommitIndex, st.AppliedIndex, st.LastIndex, st.Leader,
			strings.Join(st.Voters, "|"), strings.Join(st.Nonvoters, "|"))
		if st.Role == "leader" && len(st.Followers) > 0 {
			var f []string
			for _, fl := range st.Followers {
				if fl.Known {
					f = append(f, fl.ID+"@"+strconv.FormatUint(fl.Stored, 10))
				} else {
					f = append(f, fl.ID+"@?")
				}
			}
			line += ",followers=" + strings.Join(f, "/")
		}
		w.kv("shard"+strconv.Itoa(sh), line)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// humanBytes is Redis's bytesToHuman.
func humanBytes(n uint64) string {
	units := []string{"K", "M", "G", "T", "P"}
	if n < 1024 {
		return strconv.FormatUint(n, 10) + "B"
	}
	d := float64(n)
	for _, u := range units {
		if d /= 1024; d < 1024 {
			return fmt.Sprintf("%.2f%s", d, u)
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

// processRSS is the process's resident set size, as Redis's used_memory_rss
// (from /proc/self/statm), or fallback where that cannot be read.
func processRSS(fallback uint64) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return fallback
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return fallback
	}
	return pages * uint64(os.Getpagesize())
}

// cpuTimes is the process's system and user CPU seconds (/proc/self/stat),
// zeros where that cannot be read.
func cpuTimes() (sys, user float64) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0
	}
	// The fields after the command name (which may hold spaces) start
	// after its closing parenthesis; utime and stime are the 14th and 15th
	// fields of the line.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0
	}
	const ticks = 100 // USER_HZ on Linux
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return st / ticks, u / ticks
}

// infoBus writes INFO's "bus" section (ours): the node's background
// traffic on the cluster bus (totals since start; rates are differences
// over time) and its view of the controller group.
func (s *Server) infoBus(w infoWriter) {
	st := s.be.BusStats()
	w.kv("bus_requests_sent", st.Requests())
	w.kv("bus_raft_requests_sent", st.RaftRequests)
	w.kv("bus_rpc_requests_sent", st.RPCRequests)
	w.kv("bus_gossip_packets_sent", st.GossipPackets)
	w.kv("bus_gossip_streams_opened", st.GossipStreams)
	w.kv("bus_status_polls_sent", st.StatusPolls)
	w.kv("bus_bytes_sent", st.BytesSent)
	w.kv("bus_bytes_received", st.BytesReceived)
	rb := st.RaftBus
	w.kv("raft_append_rpcs", rb.AppendRPCs)
	w.kv("raft_append_heartbeats", rb.Heartbeats)
	w.kv("raft_append_entries", rb.Entries)
	w.kv("raft_bus_sent_bytes", rb.BytesSent)
	w.kv("raft_bus_writes", rb.Writes)
	w.kv("raft_bus_fallbacks", rb.Fallbacks)
	w.kv("raft_bus_received", rb.Received)
	w.kv("raft_bus_busy", rb.Busy)
	w.kv("raft_bus_early_sent", rb.Early)
	w.kv("raft_bus_early_failed", rb.EarlyFailed)
	w.kv("raft_bus_early_answered", rb.EarlyAnswered)
	w.kv("gossip", st.Gossip)
	w.kv("gossip_members", st.GossipMembers)
	w.kv("controller_role", st.CtrlRole)
	w.kv("controller_leader", st.CtrlLeaderID)
	w.kv("controller_voters", strings.Join(st.CtrlVoters, ","))
	w.kv("controller_nonvoters", strings.Join(st.CtrlNonvoters, ","))
	w.kv("controller_epoch", st.CtrlMembership)
}
