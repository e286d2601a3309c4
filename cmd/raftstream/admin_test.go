package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp"
)

// httpGet returns the status and body of an admin endpoint (status 0 when
// the request failed).
func httpGet(url string) (int, string) {
	cl := http.Client{Timeout: 5 * time.Second}
	r, err := cl.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// scrape parses /metrics into series (name{labels} as printed) -> value,
// checking every line is valid text format on the way.
func scrape(t *testing.T, adminAddr string) map[string]float64 {
	t.Helper()
	code, body := httpGet("http://" + adminAddr + "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (\S+)$`)
	out := map[string]float64{}
	// A series or a family's HELP/TYPE line given twice makes Prometheus
	// reject the whole scrape.
	meta := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			key := strings.Join(strings.Fields(l)[:3], " ")
			if meta[key] {
				t.Fatalf("/metrics has %q twice", key)
			}
			meta[key] = true
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("malformed metrics line %q", l)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", l, err)
		}
		if _, dup := out[m[1]]; dup {
			t.Fatalf("/metrics has series %s twice", m[1])
		}
		out[m[1]] = v
	}
	return out
}

// rawDo runs one command on addr and returns the raw reply.
func rawDo(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(r)
}

// runCLI runs the raftstream binary with args and returns its stdout.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(testkit.Server(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, errb.String())
	}
	return out.String(), err
}

// TestAdminReadyWaitsForServer checks /readyz's question: not ready,
// whatever the node says, until the RESP server is attached; then the
// node's answer.
func TestAdminReadyWaitsForServer(t *testing.T) {
	var srv atomic.Pointer[resp.Server]
	ready := readyOnceServing(&srv, func() (bool, string) { return true, "1 local shard replicas have a leader and are caught up" })
	if ok, why := ready(); ok || why != "not serving clients yet (waiting for shard leaders at startup)" {
		t.Errorf("before the server: %v %q", ok, why)
	}
	srv.Store(new(resp.Server))
	if ok, why := ready(); !ok || why != "1 local shard replicas have a leader and are caught up" {
		t.Errorf("with the server: %v %q", ok, why)
	}
}

// TestAdminMetricsAfterWorkload runs a real node with --admin-addr, drives a
// stream workload through a real client, and finds the named series with
// the values the workload implies.
func TestAdminMetricsAfterWorkload(t *testing.T) {
	admin := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	n := startNode(t, "", "--admin-addr", admin, "--metrics-streams", "2")
	const N, read = 60, 25
	c, err := testkit.Dial(n.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < N; i++ {
		if _, err := c.Do("XADD", "orders", "*", "n", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		c.Do("XADD", "small", "*", "n", "1")
	}
	c.Do("XADD", "tiny", "*", "n", "1")
	if r, _ := c.Do("XGROUP", "CREATE", "orders", "billing", "0"); string(r) != "+OK\r\n" {
		t.Fatalf("XGROUP CREATE: %q", r)
	}
	c.Do("XREADGROUP", "GROUP", "billing", "w1", "COUNT", strconv.Itoa(read), "STREAMS", "orders", ">")
	c.Do("XLEN", "orders")
	if r := rawDo(t, n.Addr, "RAFTSTREAM", "SNAPSHOT"); r != ":1\r\n" {
		t.Fatalf("RAFTSTREAM SNAPSHOT = %q, want :1", r)
	}

	m := scrape(t, admin)
	want := map[string]float64{
		`raftstream_commands_total{cmd="xadd"}`:                                      N + 4,
		`raftstream_commands_total{cmd="xgroup|create"}`:                             1,
		`raftstream_commands_total{cmd="xreadgroup"}`:                                1,
		`raftstream_command_duration_seconds_count{cmd="xadd"}`:                      N + 4,
		`raftstream_stream_length{shard="0",stream="orders"}`:                        N,
		`raftstream_stream_length{shard="0",stream="small"}`:                         3,
		`raftstream_stream_group_pending{shard="0",stream="orders",group="billing"}`: read,
		`raftstream_stream_group_lag{shard="0",stream="orders",group="billing"}`:     N - read,
		`raftstream_shard_role{shard="0",role="leader"}`:                             1,
		`raftstream_shard_has_leader{shard="0"}`:                                     1,
		`raftstream_shard_apply_lag{shard="0"}`:                                      0,
		`raftstream_shard_snapshots_total{shard="0"}`:                                1,
		`raftstream_shard_snapshot_seconds_count{shard="0"}`:                         1,
		`raftstream_shard_proposals_rejected_total{shard="0"}`:                       0,
		`raftstream_shard_node_log_segments_held{shard="0"}`:                         0,
		`raftstream_ready`:                     1,
		`raftstream_clients_blocked`:           0,
		`raftstream_cluster_nodes{state="up"}`: 1,
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			t.Errorf("series %s missing", k)
		} else if got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if v := m[`raftstream_clients_connected`]; v < 1 {
		t.Errorf("raftstream_clients_connected = %v with a client connected", v)
	}
	if _, ok := m[`raftstream_stream_length{shard="0",stream="tiny"}`]; ok {
		t.Errorf("--metrics-streams 2 exported a third stream")
	}
	// Every write went through one Raft entry each (one client, waiting), so
	// entries and batch sizes account for at least the N+4 XADDs.
	if v := m[`raftstream_shard_batch_commands_sum{shard="0"}`]; v < N+4+2 {
		t.Errorf("batch_commands_sum = %v, want >= %d", v, N+6)
	}
	if v := m[`raftstream_shard_commit_seconds_count{shard="0"}`]; v < N+4 {
		t.Errorf("commit_seconds_count = %v, want >= %d", v, N+4)
	}
	if v := m[`raftstream_shard_commit_seconds_bucket{shard="0",le="+Inf"}`]; v != m[`raftstream_shard_commit_seconds_count{shard="0"}`] {
		t.Errorf("commit_seconds +Inf bucket %v != count", v)
	}
	if m[`raftstream_shard_applied_index{shard="0"}`] < N || m[`raftstream_shard_term{shard="0"}`] < 1 ||
		m[`raftstream_shard_leader_changes_total{shard="0"}`] < 1 || m[`raftstream_shard_snapshot_bytes{shard="0"}`] <= 0 {
		t.Errorf("implausible raft series: applied=%v term=%v leader_changes=%v snapshot_bytes=%v",
			m[`raftstream_shard_applied_index{shard="0"}`], m[`raftstream_shard_term{shard="0"}`],
			m[`raftstream_shard_leader_changes_total{shard="0"}`], m[`raftstream_shard_snapshot_bytes{shard="0"}`])
	}
	if code, _ := httpGet("http://" + admin + "/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, body := httpGet("http://" + admin + "/readyz"); code != 200 {
		t.Errorf("/readyz = %d %s", code, body)
	}
	if code, _ := httpGet("http://" + admin + "/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ without --pprof = %d, want 404", code)
	}
}

// adminNode is one node of a test cluster with its own admin port (adm),
// logging JSON at the default level.
type adminNode struct {
	*testkit.Node
	adm string
}

// startAdminCluster starts n nodes (shards shards) logging JSON at the
// default level, each with --admin-addr.
func startAdminCluster(t *testing.T, n, shards int) []adminNode {
	nodes := testkit.NewCluster(t, n, "--shards", strconv.Itoa(shards), "--log-format", "json",
		"--raft-heartbeat-timeout", "300ms", "--raft-election-timeout", "300ms")
	procs := make([]adminNode, n)
	for i, nd := range nodes {
		procs[i] = adminNode{nd, fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))}
		nd.Args = append(nd.Args, "--admin-addr", procs[i].adm)
	}
	testkit.StartAll(t, nodes...)
	return procs
}

// waitHTTP polls url until it answers code, or fails the test after d.
func waitHTTP(t *testing.T, url string, code int, d time.Duration) {
	t.Helper()
	var got int
	var body string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, body = httpGet(url); got == code {
			return
		}
	}
	t.Fatalf("%s: still %d (%s) after %v, want %d", url, got, strings.TrimSpace(body), d, code)
}

// TestAdminClusterReadinessStatusAndLogs runs 3 real nodes: every /readyz
// turns 200; `raftstream status` lists every node and every shard replica;
// transfer-leader moves a leader; killing two nodes makes the survivor's
// /readyz 503 (its shards lost quorum) and restarting them makes it 200
// again. Finally every log line of every node is one JSON object and none
// is at DEBUG level.
func TestAdminClusterReadinessStatusAndLogs(t *testing.T) {
	const shards = 2
	procs := startAdminCluster(t, 3, shards)
	for _, p := range procs {
		waitHTTP(t, "http://"+p.adm+"/readyz", 200, 60*time.Second)
	}

	out, err := runCLI(t, "status", "--addr", procs[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if !strings.Contains(out, p.Addr) {
			t.Errorf("status does not list node %s:\n%s", p.Addr, out)
		}
	}
	leaderOf := map[int]string{}
	replicas := map[int]int{}
	row := regexp.MustCompile(`(?m)^(\d+)\s+(\S+)\s+(\S+)\s+(leader|follower|candidate)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)`)
	for _, m := range row.FindAllStringSubmatch(out, -1) {
		sh, _ := strconv.Atoi(m[1])
		replicas[sh]++
		if m[4] == "leader" {
			leaderOf[sh] = m[3]
		}
	}
	for sh := 0; sh < shards; sh++ {
		if replicas[sh] != 3 || leaderOf[sh] == "" {
			t.Errorf("status: shard %d has %d replica rows, leader %q:\n%s", sh, replicas[sh], leaderOf[sh], out)
		}
	}

	// transfer-leader, sent to a node that does not lead shard 0 (the CLI
	// finds the leader): status then shows another node leading it.
	if old := leaderOf[0]; old != "" {
		other := procs[0].Addr
		if other == old {
			other = procs[1].Addr
		}
		if o, err := runCLI(t, "transfer-leader", "--addr", other, "--shard", "0"); err != nil {
			t.Errorf("transfer-leader: %v %s", err, o)
		} else {
			moved := false
			for deadline := time.Now().Add(10 * time.Second); !moved && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				o, _ := runCLI(t, "status", "--addr", procs[0].Addr)
				for _, m := range row.FindAllStringSubmatch(o, -1) {
					if m[1] == "0" && m[4] == "leader" && m[3] != old {
						moved = true
					}
				}
			}
			if !moved {
				t.Errorf("shard 0 still led by %s after transfer-leader", old)
			}
		}
	}
	if o, err := runCLI(t, "snapshot", "--addr", procs[0].Addr); err != nil || !strings.Contains(o, "snapshot(s) taken") {
		t.Errorf("snapshot: %q %v", o, err)
	}

	// Quorum loss: the survivor must stop claiming readiness.
	t.Logf("status:\n%s", out)
	procs[1].Kill()
	procs[2].Kill()
	start := time.Now()
	waitHTTP(t, "http://"+procs[0].adm+"/readyz", 503, 30*time.Second)
	_, why := httpGet("http://" + procs[0].adm + "/readyz")
	t.Logf("survivor not ready after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(why))
	if m := scrape(t, procs[0].adm); m["raftstream_ready"] != 0 {
		t.Errorf("raftstream_ready = %v while quorum is lost", m["raftstream_ready"])
	}
	testkit.StartAll(t, procs[1].Node, procs[2].Node)
	start = time.Now()
	waitHTTP(t, "http://"+procs[0].adm+"/readyz", 200, 60*time.Second)
	t.Logf("survivor ready again %v after the restart", time.Since(start).Round(time.Millisecond))
	for _, p := range procs {
		p.Kill()
	}

	for i, p := range procs {
		f, err := os.Open(p.Log)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		lines := 0
		for sc.Scan() {
			l := sc.Bytes()
			if bytes.HasPrefix(l, []byte("WARNING: DATA RACE")) {
				t.Errorf("node %d: data race in log", i)
			}
			if bytes.HasPrefix(l, []byte("SCHED ")) {
				// The Go runtime's scheduler line, on a host up for 24.8
				// days (sysmon.go, OPERATIONS §9): not the node's log.
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal(l, &ev); err != nil {
				t.Errorf("node %d: log line is not JSON: %q", i, l)
				continue
			}
			lines++
			if lv, _ := ev["level"].(string); lv == "DEBUG" || lv == "" {
				t.Errorf("node %d: level %q at the default log level: %q", i, lv, l)
			}
			if _, ok := ev["msg"].(string); !ok {
				t.Errorf("node %d: log line without msg: %q", i, l)
			}
		}
		f.Close()
		if lines == 0 {
			t.Errorf("node %d logged nothing", i)
		}
	}
}

// TestAdminRemoveNode drains one of 4 nodes with `raftstream remove-node`:
// afterwards the status table no longer lists it and every shard still has
// 3 replicas with a leader.
func TestAdminRemoveNode(t *testing.T) {
	const shards = 2
	procs := startAdminCluster(t, 4, shards)
	for _, p := range procs {
		waitHTTP(t, "http://"+p.adm+"/readyz", 200, 60*time.Second)
	}
	idRe := regexp.MustCompile(`(?m)^([0-9a-f]{40}) ` + regexp.QuoteMeta(procs[3].Addr) + `@`)
	m := idRe.FindStringSubmatch(rawBulk(t, procs[0].Addr, "CLUSTER", "NODES"))
	if m == nil {
		t.Fatalf("node %s not in CLUSTER NODES", procs[3].Addr)
	}
	if o, err := runCLI(t, "remove-node", "--addr", procs[0].Addr, "--node", m[1], "--timeout", "60s"); err != nil {
		t.Fatalf("remove-node: %v %s", err, o)
	}
	row := regexp.MustCompile(`(?m)^(\d+)\s+(\S+)\s+(\S+)\s+(leader|follower|candidate)\s`)
	var out string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, _ = runCLI(t, "status", "--addr", procs[0].Addr)
		if strings.Contains(out, procs[3].Addr) {
			continue
		}
		reps, leaders := map[string]int{}, map[string]int{}
		for _, r := range row.FindAllStringSubmatch(out, -1) {
			reps[r[1]]++
			if r[4] == "leader" {
				leaders[r[1]]++
			}
		}
		ok := true
		for sh := 0; sh < shards; sh++ {
			k := strconv.Itoa(sh)
			ok = ok && reps[k] == 3 && leaders[k] == 1
		}
		if ok {
			return
		}
	}
	t.Fatalf("after remove-node the status is:\n%s", out)
}

// rawBulk runs one command and returns its bulk-string reply's payload.
func rawBulk(t *testing.T, addr string, args ...string) string {
	t.Helper()
	r := rawDo(t, addr, args...)
	if _, body, ok := strings.Cut(r, "\r\n"); ok && strings.HasPrefix(r, "$") {
		return strings.TrimSuffix(body, "\r\n")
	}
	t.Fatalf("%v: not a bulk reply: %q", args, r)
	return ""
}
