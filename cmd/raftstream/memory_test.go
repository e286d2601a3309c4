package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/resp/resptest"
)

// TestBulkLoadMemoryStaysNearRedis loads the 1M uniform order entries of
// PERFORMANCE.md point 4 (what `cost-bench.sh … rss` sends) into a real node
// and into redis-server, each over one connection streaming the commands
// while it reads the replies, as redis-cli --pipe does. The node's anonymous
// memory (RssAnon: its heap and stacks, not the binary's or the log store's
// mapped file pages), sampled every 20 ms during the load and for two
// seconds after it, must stay within 1.5× Redis's whole RSS for the same
// data. This holds because the node reads a pipelined stream a bounded
// window at a time (resp/guard.go), its log cache is bounded in bytes
// (fsm/logcache.go) and the Go heap may grow only 25% past its live data
// (gcpolicy.go); without them the peak was about 8× Redis.
func TestBulkLoadMemoryStaysNearRedis(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector multiplies the heap; memory is measured on the normal build")
	}
	const n = 1_000_000
	var fill bytes.Buffer
	fill.Grow(n * 96)
	for i := 1; i <= n; i++ {
		id := strconv.Itoa(i) + "-0"
		fmt.Fprintf(&fill, "*9\r\n$4\r\nXADD\r\n$1\r\ns\r\n$%d\r\n%s\r\n$8\r\ncustomer\r\n$8\r\nc%07d\r\n$6\r\namount\r\n$5\r\n%05d\r\n$3\r\nsku\r\n$10\r\nSKU-%06d\r\n",
			len(id), id, i%10000000, 10000+i%90000, i%1000000)
	}

	redis := resptest.StartRedis(t)
	redisPid := serverPid(t, redis)
	pipeLoad(t, redis, fill.Bytes(), n)
	time.Sleep(2 * time.Second)
	redisRSS := procStatus(t, redisPid)["VmRSS"]

	nd := startNode(t, "")
	before := procStatus(t, nd.cmd.Process.Pid)
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if st, err := readProcStatus(nd.cmd.Process.Pid); err == nil && st["RssAnon"] > peak.Load() {
				peak.Store(st["RssAnon"])
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	pipeLoad(t, nd.Addr, fill.Bytes(), n)
	took := time.Since(start)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	after := procStatus(t, nd.cmd.Process.Pid)

	c := dial(t, nd.Addr)
	if got := do(t, c, "XLEN", "s"); got != fmt.Sprintf(":%d\r\n", n) {
		t.Fatalf("XLEN after the load = %q", got)
	}
	rc := dial(t, redis)
	if got := do(t, rc, "XLEN", "s"); got != fmt.Sprintf(":%d\r\n", n) {
		t.Fatalf("Redis XLEN after the load = %q", got)
	}
	t.Logf("load %s took %v; Redis VmRSS %d kB; node empty VmRSS %d kB, after VmRSS %d kB (anon %d, file %d), peak anon %d kB (%.2fx Redis)",
		strings.TrimSpace(loadavg()), took.Round(time.Millisecond), redisRSS, before["VmRSS"], after["VmRSS"], after["RssAnon"], after["RssFile"],
		peak.Load(), float64(peak.Load())/float64(redisRSS))
	if limit := redisRSS * 3 / 2; peak.Load() > limit {
		t.Fatalf("node's anonymous RSS peaked at %d kB during the load, over 1.5x Redis's RSS for the same data (%d kB: limit %d kB)",
			peak.Load(), redisRSS, limit)
	}
}

// pipeLoad streams data (n commands) over one connection while reading the
// n replies, failing on an error reply.
func pipeLoad(t *testing.T, addr string, data []byte, n int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Minute))
	werr := make(chan error, 1)
	go func() {
		var err error
		for rest := data; len(rest) > 0 && err == nil; {
			k := min(len(rest), 64<<10)
			_, err = conn.Write(rest[:k])
			rest = rest[k:]
		}
		werr <- err
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	for i := 0; i < n; i++ {
		line, err := r.ReadSlice('\n')
		if err != nil {
			t.Fatalf("%s: reply %d: %v", addr, i, err)
		}
		switch line[0] {
		case '$':
			if _, err := r.ReadSlice('\n'); err != nil {
				t.Fatalf("%s: reply %d: %v", addr, i, err)
			}
		case '-':
			t.Fatalf("%s: reply %d: %s", addr, i, line)
		}
	}
	if err := <-werr; err != nil {
		t.Fatalf("%s: write: %v", addr, err)
	}
}

// serverPid is a Redis-protocol server's process_id (INFO server).
func serverPid(t *testing.T, addr string) int {
	t.Helper()
	c := dial(t, addr)
	info := do(t, c, "INFO", "server")
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no process_id in INFO server of %s", addr)
	return 0
}

// readProcStatus returns the kB fields of /proc/pid/status (VmRSS, RssAnon,
// RssFile, VmHWM …).
func readProcStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			m[k], _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return m, nil
}

func procStatus(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	m, err := readProcStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}
