package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
)

// infoField reads a numeric field of an INFO section.
func infoField(t *testing.T, addr, section, field string) int64 {
	t.Helper()
	info := rawBulk(t, addr, "INFO", section)
	m := regexp.MustCompile(`(?m)^` + field + `:(\d+)\r$`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO %s has no %s:\n%s", section, field, info)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// TestNodeLogGroupCommitsShards: a node's shards keep their Raft logs in
// the one node log, and writes to many shards at once share its writes
// (each a write and an fdatasync): fewer writes than shard requests. The
// entries survive a SIGKILL. INFO persistence counts the entries the
// node's shard leaders proposed, their commands and their commit time.
func TestNodeLogGroupCommitsShards(t *testing.T) {
	n := startNode(t, "", "--shards", "16")
	if segs, _ := filepath.Glob(filepath.Join(n.Dir, "nodelog", "*.seg")); len(segs) == 0 {
		t.Fatal("no node log segment in the data dir")
	}
	if _, err := os.Stat(filepath.Join(n.Dir, "shards", "0", "raft.db")); err == nil {
		t.Fatal("a new shard got a bbolt log")
	}
	w0 := infoField(t, n.Addr, "persistence", "raft_log_writes")
	r0 := infoField(t, n.Addr, "persistence", "raft_log_requests")
	p0 := infoField(t, n.Addr, "persistence", "raft_entries_proposed")
	c0 := infoField(t, n.Addr, "persistence", "raft_entry_commands")
	e0 := infoField(t, n.Addr, "persistence", "raft_entries_committed")
	u0 := infoField(t, n.Addr, "persistence", "raft_commit_usec")
	const clients, each = 32, 40
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn := dial(t, n.Addr)
			for i := 0; i < each; i++ {
				key := fmt.Sprintf("orders:{%d}", (c*each+i)%64)
				if r, err := cn.Do("XADD", key, "*", "c", strconv.Itoa(c), "i", strconv.Itoa(i)); err != nil || r[0] != '$' {
					t.Errorf("XADD %s: %q %v", key, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	writes := infoField(t, n.Addr, "persistence", "raft_log_writes") - w0
	reqs := infoField(t, n.Addr, "persistence", "raft_log_requests") - r0
	t.Logf("%d XADDs to 64 streams on 16 shards: %d shard log requests in %d node log writes", clients*each, reqs, writes)
	if reqs == 0 || writes == 0 || writes >= reqs {
		t.Fatalf("%d node log writes for %d shard requests: the shards' appends were not committed together", writes, reqs)
	}
	proposed := infoField(t, n.Addr, "persistence", "raft_entries_proposed") - p0
	cmds := infoField(t, n.Addr, "persistence", "raft_entry_commands") - c0
	committed := infoField(t, n.Addr, "persistence", "raft_entries_committed") - e0
	usec := infoField(t, n.Addr, "persistence", "raft_commit_usec") - u0
	t.Logf("%d entries proposed with %d commands; %d committed in %d µs", proposed, cmds, committed, usec)
	if cmds < clients*each || proposed < 1 || proposed > cmds || committed < 1 || committed > proposed || usec < committed {
		t.Fatalf("INFO persistence: %d entries proposed, %d commands, %d committed, %d µs of commits after %d XADDs",
			proposed, cmds, committed, usec, clients*each)
	}

	n.Kill()
	n.Start()
	c := dial(t, n.Addr)
	total := 0
	for k := 0; k < 64; k++ {
		r := do(t, c, "XLEN", fmt.Sprintf("orders:{%d}", k))
		v, _ := strconv.Atoi(r[1 : len(r)-2])
		total += v
	}
	if total != clients*each {
		t.Fatalf("%d entries after SIGKILL and restart, want %d", total, clients*each)
	}
}

// TestInfoMemoryRSSIsTheProcessRSS: INFO memory's used_memory_rss is the
// server process's resident set, as in Redis (it was the Go runtime's
// reserved memory).
func TestInfoMemoryRSSIsTheProcessRSS(t *testing.T) {
	n := startNode(t, "")
	c := dial(t, n.Addr)
	for i := 0; i < 2000; i++ {
		do(t, c, "XADD", "s", "*", "f", strconv.Itoa(i))
	}
	got := infoField(t, n.Addr, "memory", "used_memory_rss")
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/pid/status")
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	want := kb << 10
	if got < want*95/100 || got > want*105/100 {
		t.Fatalf("used_memory_rss %d, the process's VmRSS %d", got, want)
	}
}
