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

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
)

// TestBulkLoadMemoryStaysNearRedis loads the 1M uniform order entries of the
// memory rows of cmd/ordersbench/PERFORMANCE.md (what `single-node.sh memory`
// sends) into a real node and into redis-server, each over one connection
// streaming the commands while it reads the replies, as redis-cli --pipe
// does. Sampled during the load and for two seconds after it, the node must
// stay within 1.5× Redis's whole RSS for the same data, in two measures:
//
//   - the Go runtime's memory (MemStats Sys − HeapReleased, from the admin
//     port's /debug/pprof/heap), every 100 ms;
//   - the process's anonymous memory (RssAnon: heap and stacks, not the
//     binary's or the log store's mapped file pages), every 20 ms, except
//     under the race detector, whose shadow memory is several times the heap.
//
// Then, at rest, its whole RSS (VmRSS, file pages included, as Redis's is
// measured) must be within 1.5× Redis's too (the idle trim of gcpolicy.go
// brings it to about 1.3× within a second or two).
//
// This holds because the node reads a pipelined stream a bounded window at a
// time (resp/guard.go), its log cache is bounded in bytes (fsm/logcache.go)
// and the Go heap may grow only 25% past its live data (gcpolicy.go);
// without them RssAnon peaked at about 13× Redis's RSS.
func TestBulkLoadMemoryStaysNearRedis(t *testing.T) {
	const n = 1_000_000
	var fill bytes.Buffer
	fill.Grow(n * 96)
	for i := 1; i <= n; i++ {
		id := strconv.Itoa(i) + "-0"
		fmt.Fprintf(&fill, "*9\r\n$4\r\nXADD\r\n$1\r\ns\r\n$%d\r\n%s\r\n$8\r\ncustomer\r\n$8\r\nc%07d\r\n$6\r\namount\r\n$5\r\n%05d\r\n$3\r\nsku\r\n$10\r\nSKU-%06d\r\n",
			len(id), id, i%10000000, 10000+i%90000, i%1000000)
	}

	redis := testkit.StartRedis(t)
	redisPid := serverPid(t, redis)
	pipeLoad(t, redis, fill.Bytes(), n)
	time.Sleep(2 * time.Second)
	redisRSS := procStatus(t, redisPid)["VmRSS"]

	admin := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	nd := startNode(t, "", "--admin-addr", admin, "--pprof")
	before := procStatus(t, nd.Pid())
	var peakAnon, peakGo atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	sample := func(every time.Duration, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				f()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	if !testkit.Race {
		sample(20*time.Millisecond, func() {
			if st, err := readProcStatus(nd.Pid()); err == nil && st["RssAnon"] > peakAnon.Load() {
				peakAnon.Store(st["RssAnon"])
			}
		})
	}
	sample(100*time.Millisecond, func() {
		if kb := goMemoryKB(admin); kb > peakGo.Load() {
			peakGo.Store(kb)
		}
	})
	start := time.Now()
	pipeLoad(t, nd.Addr, fill.Bytes(), n)
	took := time.Since(start)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	after := procStatus(t, nd.Pid())
	// At rest (nothing sent, nothing sampled): the node's whole RSS, as
	// Redis's was measured, the least seen within 3 s (the idle trim looks
	// once a second).
	restRSS := after["VmRSS"]
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		restRSS = min(restRSS, procStatus(t, nd.Pid())["VmRSS"])
	}

	c := dial(t, nd.Addr)
	if got := do(t, c, "XLEN", "s"); got != fmt.Sprintf(":%d\r\n", n) {
		t.Fatalf("XLEN after the load = %q", got)
	}
	rc := dial(t, redis)
	if got := do(t, rc, "XLEN", "s"); got != fmt.Sprintf(":%d\r\n", n) {
		t.Fatalf("Redis XLEN after the load = %q", got)
	}
	t.Logf("load %s took %v; Redis VmRSS %d kB; node empty VmRSS %d kB, after VmRSS %d kB (anon %d, file %d), at rest %d kB (%.2fx); peak Go memory %d kB (%.2fx Redis), peak anon %d kB (%.2fx; race %v)",
		strings.TrimSpace(loadavg()), took.Round(time.Millisecond), redisRSS, before["VmRSS"], after["VmRSS"], after["RssAnon"], after["RssFile"],
		restRSS, float64(restRSS)/float64(redisRSS),
		peakGo.Load(), float64(peakGo.Load())/float64(redisRSS), peakAnon.Load(), float64(peakAnon.Load())/float64(redisRSS), testkit.Race)
	limit := redisRSS * 3 / 2
	if !testkit.Race && restRSS > limit {
		t.Errorf("node's RSS at rest after the load is %d kB, over 1.5x Redis's RSS for the same data (%d kB: limit %d kB)",
			restRSS, redisRSS, limit)
	}
	if peakGo.Load() == 0 {
		t.Fatal("no sample of the node's Go memory")
	}
	if peakGo.Load() > limit {
		t.Errorf("node's Go memory peaked at %d kB during the load, over 1.5x Redis's RSS for the same data (%d kB: limit %d kB)",
			peakGo.Load(), redisRSS, limit)
	}
	if peakAnon.Load() > limit {
		t.Errorf("node's anonymous RSS peaked at %d kB during the load, over 1.5x Redis's RSS for the same data (%d kB: limit %d kB)",
			peakAnon.Load(), redisRSS, limit)
	}
}

// goMemoryKB is the memory the node's Go runtime holds from the OS (Sys
// less HeapReleased), read from its heap profile's MemStats; 0 if it could
// not be read.
func goMemoryKB(admin string) int64 {
	code, body := httpGet("http://" + admin + "/debug/pprof/heap?debug=1")
	if code != 200 {
		return 0
	}
	field := func(name string) int64 {
		i := strings.Index(body, "\n# "+name+" = ")
		if i < 0 {
			return -1
		}
		rest := body[i+len(name)+6:]
		v, err := strconv.ParseInt(rest[:strings.IndexByte(rest, '\n')], 10, 64)
		if err != nil {
			return -1
		}
		return v
	}
	sys, released := field("Sys"), field("HeapReleased")
	if sys < 0 || released < 0 {
		return 0
	}
	return (sys - released) >> 10
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
		reply, err := wire.ReadReply(r)
		if err != nil {
			t.Fatalf("%s: reply %d: %v", addr, i, err)
		}
		if reply[0] == '-' {
			t.Fatalf("%s: reply %d: %s", addr, i, reply)
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
