package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// writerLog is one connection's XADD outcomes, in order.
type writerLog struct {
	acked   []string // IDs acknowledged
	errs    map[string]int
	okAfter int // acknowledgements received after this connection's first error
}

// TestFsyncErrorLosesNoAcknowledgedWrite makes the Raft log store's writes
// fail with an fsync error (EIO) while four clients write
// (logStoreFaultEnv: the write reaches bbolt, its result is replaced):
// from its first error on no connection is acknowledged a write; the node
// reports the fault in its log, INFO persistence, /readyz and /metrics;
// after a restart on the healed disk every acknowledged write is there and
// the node serves again.
func TestFsyncErrorLosesNoAcknowledgedWrite(t *testing.T) {
	faultFile := filepath.Join(t.TempDir(), "fail-fsync")
	t.Setenv(logStoreFaultEnv, faultFile)
	admin := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	n := startNode(t, "", "--admin-addr", admin, "--snapshot-interval", "1h")
	if code, body := httpGet("http://" + admin + "/readyz"); code != 200 {
		t.Fatalf("/readyz before the fault: %d %s", code, body)
	}

	const writers = 4
	logs := make([]*writerLog, writers)
	var total sync.WaitGroup
	var mu sync.Mutex
	ackedTotal := 0
	faultAt := make(chan struct{})
	for w := range writers {
		logs[w] = &writerLog{errs: map[string]int{}}
		total.Add(1)
		go func() {
			defer total.Done()
			l := logs[w]
			c, err := testkit.Dial(n.Addr)
			if err != nil {
				l.errs["dial: "+err.Error()]++
				return
			}
			defer c.Close()
			key := "w" + strconv.Itoa(w)
			consecutive := 0
			start := time.Now()
			for i := 0; consecutive < 30 && time.Since(start) < 60*time.Second; i++ {
				c.SetDeadline(time.Now().Add(30 * time.Second))
				r, err := c.Do("XADD", key, "*", "i", strconv.Itoa(i))
				switch {
				case err != nil:
					l.errs["connection: "+err.Error()]++
					return
				case bytes.HasPrefix(r, []byte("$")):
					id := string(r[bytes.Index(r, []byte("\r\n"))+2 : len(r)-2])
					l.acked = append(l.acked, id)
					if len(l.errs) > 0 {
						l.okAfter++
					}
					consecutive = 0
					mu.Lock()
					ackedTotal++
					if ackedTotal == 400 {
						close(faultAt)
					}
					mu.Unlock()
				default:
					l.errs[strings.TrimSpace(string(r))]++
					consecutive++
				}
			}
		}()
	}
	select {
	case <-faultAt:
	case <-time.After(60 * time.Second):
		t.Fatal("400 writes were not acknowledged within 60s")
	}
	if err := os.WriteFile(faultFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	total.Wait()

	acked := 0
	errMsgs := map[string]int{}
	for w, l := range logs {
		acked += len(l.acked)
		for m, k := range l.errs {
			errMsgs[m] += k
		}
		if l.okAfter > 0 {
			t.Errorf("writer %d: %d writes acknowledged after its first error %v", w, l.okAfter, l.errs)
		}
		if len(l.errs) == 0 {
			t.Errorf("writer %d: no write failed after the fault (%d acknowledged)", w, len(l.acked))
		}
	}
	t.Logf("%d writes acknowledged before the fault; errors after it: %v", acked, errMsgs)
	refused := false
	for m := range errMsgs {
		if strings.HasPrefix(m, "connection: ") {
			t.Errorf("a connection failed instead of getting an error reply: %s", m)
		}
		refused = refused || strings.Contains(m, "Raft log store failed")
	}
	if !refused {
		t.Errorf("no error reply names the failed log store: %v", errMsgs)
	}

	// The node reports the fault.
	logb, _ := os.ReadFile(n.Log)
	if !bytes.Contains(logb, []byte("Raft log store write failed")) || !bytes.Contains(logb, []byte("input/output error")) {
		t.Errorf("the log does not report the failed write:\n%s", tail(logb, 3000))
	}
	if info := rawBulk(t, n.Addr, "INFO", "persistence"); !strings.Contains(info, "raft_log_last_write_status:err\r\n") ||
		!strings.Contains(info, "raft_log_failed_shards:0\r\n") {
		t.Errorf("INFO persistence:\n%s", info)
	}
	if code, body := httpGet("http://" + admin + "/readyz"); code != 503 || !strings.Contains(body, "Raft log store failed") {
		t.Errorf("/readyz after the fault: %d %s", code, body)
	}
	if v, ok := scrape(t, admin)[`raftstream_shard_storage_fault{shard="0"}`]; !ok || v != 1 {
		t.Errorf("raftstream_shard_storage_fault{shard=\"0\"} = %v (present %v), want 1", v, ok)
	}

	// Restart on the healed disk: every acknowledged write is there.
	n.Kill()
	if err := os.Remove(faultFile); err != nil {
		t.Fatal(err)
	}
	n.Restart()
	c := dial(t, n.Addr)
	for w, l := range logs {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		r, err := c.Do("XRANGE", "w"+strconv.Itoa(w), "-", "+")
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, m := range regexp.MustCompile(`\$\d+\r\n(\d+-\d+)\r\n`).FindAllSubmatch(r, -1) {
			have[string(m[1])] = true
		}
		lost := 0
		for _, id := range l.acked {
			if !have[id] {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("writer %d: %d of %d acknowledged entries lost after the restart", w, lost, len(l.acked))
		}
		t.Logf("writer %d: %d acknowledged, %d entries after the restart (the extra ones had an unknown outcome)", w, len(l.acked), len(have))
	}
	if r := do(t, c, "XADD", "after", "*", "f", "v"); !strings.HasPrefix(r, "$") {
		t.Errorf("XADD after the restart: %q", r)
	}
	if info := rawBulk(t, n.Addr, "INFO", "persistence"); !strings.Contains(info, "raft_log_last_write_status:ok\r\n") {
		t.Errorf("INFO persistence after the restart:\n%s", info)
	}
	waitHTTP(t, "http://"+admin+"/readyz", 200, 30*time.Second)
}
