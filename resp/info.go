package resp

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// infoSections are INFO's sections in Redis's order; "raft" and "bus" are
// ours.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "cluster", "keyspace", "raft", "bus"}

// cmdInfo implements INFO [section ...] (default, all, everything, or names).
func cmdInfo(s *Server, c *client, argv [][]byte) reply {
	want := map[string]bool{}
	if len(argv) == 1 {
		for _, n := range infoSections {
			want[n] = true
		}
	}
	for _, a := range argv[1:] {
		n := strings.ToLower(string(a))
		switch n {
		case "all", "everything", "default":
			for _, n := range infoSections {
				want[n] = true
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

func (s *Server) infoSection(c *client, b *strings.Builder, sec string) {
	w := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	switch sec {
	case "server":
		b.WriteString("# Server\r\n")
		w("redis_version", Version)
		w("raftstream_version", "0.1.0")
		mode := "standalone"
		if s.cfg.ClusterMode {
			mode = "cluster"
		}
		w("redis_mode", mode)
		w("os", runtime.GOOS+" "+runtime.GOARCH)
		w("arch_bits", 64)
		w("go_version", runtime.Version())
		w("process_id", os.Getpid())
		w("run_id", s.be.Topology().MyID)
		w("tcp_port", s.cfg.Port)
		w("server_time_usec", time.Now().UnixMicro())
		up := time.Since(s.started)
		w("uptime_in_seconds", int64(up.Seconds()))
		w("uptime_in_days", int64(up.Hours()/24))
		w("executable", os.Args[0])
	case "clients":
		b.WriteString("# Clients\r\n")
		s.mu.Lock()
		n := len(s.clients)
		s.mu.Unlock()
		w("connected_clients", n)
		w("cluster_connections", 0)
		w("maxclients", 10000)
		w("blocked_clients", s.nBlocked.Load())
		w("tracking_clients", 0)
		w("clients_in_timeout_table", s.nBlocked.Load())
	case "memory":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.WriteString("# Memory\r\n")
		w("used_memory", ms.HeapAlloc)
		w("used_memory_human", humanBytes(ms.HeapAlloc))
		w("used_memory_rss", processRSS(ms.Sys))
		w("used_memory_peak", ms.HeapSys)
		w("maxmemory", 0)
		w("maxmemory_policy", "noeviction")
		w("mem_allocator", "go")
	case "persistence":
		b.WriteString("# Persistence\r\n")
		w("loading", 0)
		w("aof_enabled", 0)
		w("raft_log_fsync", 1)
		// Like Redis's aof_last_write_status: err once a local replica's
		// Raft log store failed a write (that replica stopped).
		status, faulted := "ok", ""
		for i := 0; i < s.be.NumShards(); i++ {
			if fs, ok := s.be.ShardStats(i); ok && fs.StorageFault != "" {
				status = "err"
				faulted += "," + strconv.Itoa(i)
			}
		}
		w("raft_log_last_write_status", status)
		if faulted != "" {
			w("raft_log_failed_shards", faulted[1:])
		}
		ns := s.be.NodeLogStats()
		w("raft_log_writes", ns.Batches)
		w("raft_log_requests", ns.Ops)
		w("raft_log_written_bytes", ns.Bytes)
		w("raft_log_write_usec", ns.WriteTime.Microseconds())
		w("raft_log_segments", ns.Segments)
	case "stats":
		b.WriteString("# Stats\r\n")
		w("total_connections_received", s.stats.connections.Load())
		w("total_commands_processed", s.stats.commands.Load())
		w("rejected_connections", s.stats.rejected.Load())
		w("client_query_buffer_limit_disconnections", s.buf.queryDrops.Load())
		w("client_output_buffer_limit_disconnections", s.buf.outDrops.Load())
	case "replication":
		b.WriteString("# Replication\r\n")
		w("role", "master")
		w("connected_slaves", 0)
	case "cpu":
		b.WriteString("# CPU\r\n")
		w("used_cpu_sys", "0.000000")
		w("used_cpu_user", "0.000000")
	case "cluster":
		b.WriteString("# Cluster\r\n")
		en := 0
		if s.cfg.ClusterMode {
			en = 1
		}
		w("cluster_enabled", en)
	case "keyspace":
		b.WriteString("# Keyspace\r\n")
		if r, ok := cmdDBSize(s, c, [][]byte{[]byte("DBSIZE")}).(engine.Integer); ok && r > 0 {
			fmt.Fprintf(b, "db0:keys=%d,expires=0,avg_ttl=0\r\n", int64(r))
		}
	case "raft":
		b.WriteString("# Raft\r\n")
		w("raft_shards", s.be.NumShards())
		for sh := 0; sh < s.be.NumShards(); sh++ {
			st, ok := s.be.ShardStatus(sh)
			if !ok {
				continue
			}
			fmt.Fprintf(b, "shard%d:role=%s,term=%d,commit_index=%d,applied_index=%d,last_index=%d,leader=%s,voters=%s,nonvoters=%s\r\n",
				sh, st.Role, st.Term, st.CommitIndex, st.AppliedIndex, st.LastIndex, st.Leader,
				strings.Join(st.Voters, "|"), strings.Join(st.Nonvoters, "|"))
		}
	case "bus":
		s.infoBus(b)
	}
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
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
