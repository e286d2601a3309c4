package fsm

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/raftstream/raftstream/engine"
)

// countingStore counts the GetLog calls that reach the store.
type countingStore struct {
	raft.LogStore
	gets atomic.Int64
}

func (c *countingStore) GetLog(idx uint64, l *raft.Log) error {
	c.gets.Add(1)
	return c.LogStore.GetLog(idx, l)
}

func cacheTestEntry(i uint64, size int) *raft.Log {
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, size)}
}

// openCacheOverBolt opens a bbolt log store in a temp dir, wrapped in a
// GetLog counter and a logCache with the given bounds.
func openCacheOverBolt(t *testing.T, maxEntries, maxBytes int) (*logCache, *countingStore) {
	t.Helper()
	st, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(t.TempDir(), "raft.db"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{LogStore: st}
	return newLogCache(cs, maxEntries, maxBytes), cs
}

// TestLogCacheBoundsBytesAndFallsThrough stores 200 entries of 10 KiB
// through a cache bounded at 64 KiB: the cache never holds more than that,
// it holds the newest entries, and every entry reads back intact, the
// recent ones from memory and the older ones from the store.
func TestLogCacheBoundsBytesAndFallsThrough(t *testing.T) {
	const size, bound = 10 << 10, 64 << 10
	c, cs := openCacheOverBolt(t, 256, bound)
	for i := uint64(1); i <= 200; i += 4 { // batches of 4, as raft writes them
		batch := []*raft.Log{cacheTestEntry(i, size), cacheTestEntry(i+1, size), cacheTestEntry(i+2, size), cacheTestEntry(i+3, size)}
		if err := c.StoreLogs(batch); err != nil {
			t.Fatal(err)
		}
		first, n, b := c.cached()
		if b > bound {
			t.Fatalf("after index %d the cache holds %d bytes (%d entries), bound %d", i+3, b, n, bound)
		}
		if want := i + 3 - uint64(n) + 1; first != want {
			t.Fatalf("after index %d the cache starts at %d with %d entries, want the newest (from %d)", i+3, first, n, want)
		}
	}
	first, n, _ := c.cached()
	if want := bound / (size + logEntryOverhead); n != want {
		t.Fatalf("cache holds %d entries of %d bytes, want %d under %d bytes", n, size, want, bound)
	}
	for i := uint64(1); i <= 200; i++ {
		before := cs.gets.Load()
		var l raft.Log
		if err := c.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if l.Index != i || !bytes.Equal(l.Data, cacheTestEntry(i, size).Data) {
			t.Fatalf("GetLog(%d) = index %d, %d bytes: not the entry stored", i, l.Index, len(l.Data))
		}
		fromStore := cs.gets.Load() > before
		if fromStore != (i < first) {
			t.Fatalf("GetLog(%d): read from the store = %v, cached run starts at %d", i, fromStore, first)
		}
	}
	if got := cs.gets.Load(); got != int64(first-1) {
		t.Fatalf("%d reads reached the store, want %d (the entries older than the cache)", got, first-1)
	}
}

// TestLogCacheBoundsCountAndKeepsAnOversizedNewest: the count bound holds
// for small entries, and an entry larger than the byte bound is still kept
// alone (it is the one a follower applies next).
func TestLogCacheBoundsCountAndKeepsAnOversizedNewest(t *testing.T) {
	c, _ := openCacheOverBolt(t, 8, 1<<20)
	for i := uint64(1); i <= 50; i++ {
		if err := c.StoreLog(cacheTestEntry(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if first, n, _ := c.cached(); n != 8 || first != 43 {
		t.Fatalf("cached %d entries from %d, want 8 from 43", n, first)
	}
	if err := c.StoreLog(cacheTestEntry(51, 2<<20)); err != nil {
		t.Fatal(err)
	}
	if first, n, b := c.cached(); n != 1 || first != 51 || b != 2<<20+logEntryOverhead {
		t.Fatalf("after an oversized entry: %d entries from %d, %d bytes; want it alone", n, first, b)
	}
}

// TestLogCacheKeepsACopy: the cache does not keep the caller's raft.Log
// (on the leader it is part of the proposal's future, with its replies).
func TestLogCacheKeepsACopy(t *testing.T) {
	c, _ := openCacheOverBolt(t, 8, 1<<20)
	l := cacheTestEntry(1, 10)
	if err := c.StoreLog(l); err != nil {
		t.Fatal(err)
	}
	l.Data, l.Term = []byte("changed by its owner"), 9
	var got raft.Log
	if err := c.GetLog(1, &got); err != nil {
		t.Fatal(err)
	}
	if got.Term != 1 || !bytes.Equal(got.Data, cacheTestEntry(1, 10).Data) {
		t.Fatalf("cached entry follows the caller's struct: term %d data %q", got.Term, got.Data)
	}
}

// TestLogCacheDeleteRangeAndOverwrite: deleting the head (compaction) or
// the tail (a follower's conflicting suffix) keeps the rest cached and
// correct; a write that is not the next index restarts the cached run.
func TestLogCacheDeleteRangeAndOverwrite(t *testing.T) {
	c, cs := openCacheOverBolt(t, 16, 1<<20)
	for i := uint64(1); i <= 10; i++ {
		if err := c.StoreLog(cacheTestEntry(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	if first, n, _ := c.cached(); first != 4 || n != 7 {
		t.Fatalf("after deleting 1-3: %d entries from %d", n, first)
	}
	if err := c.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	if first, n, _ := c.cached(); first != 4 || n != 4 {
		t.Fatalf("after deleting 8-10: %d entries from %d", n, first)
	}
	// A follower's new tail from 8 on, in a later term.
	for i := uint64(8); i <= 9; i++ {
		l := cacheTestEntry(i, 20)
		l.Term = 2
		if err := c.StoreLog(l); err != nil {
			t.Fatal(err)
		}
	}
	var l raft.Log
	if err := c.GetLog(9, &l); err != nil || l.Term != 2 || len(l.Data) != 20 {
		t.Fatalf("GetLog(9) = term %d, %d bytes, %v; want the new entry", l.Term, len(l.Data), err)
	}
	if err := c.GetLog(2, &l); err == nil {
		t.Fatalf("GetLog(2) after deleting it = index %d, want an error", l.Index)
	}
	if first, n, _ := c.cached(); first != 4 || n != 6 {
		t.Fatalf("after rewriting 8-9: %d entries from %d, want 6 from 4", n, first)
	}
	// A jump past the next index (the log restarting after a snapshot
	// install): the cached run restarts there.
	if err := c.StoreLog(cacheTestEntry(20, 10)); err != nil {
		t.Fatal(err)
	}
	if first, n, _ := c.cached(); first != 20 || n != 1 {
		t.Fatalf("after a non-contiguous write: %d entries from %d, want 1 from 20", n, first)
	}
	before := cs.gets.Load()
	if err := c.GetLog(5, &l); err != nil || l.Index != 5 || l.Term != 1 {
		t.Fatalf("GetLog(5) = %+v, %v", l, err)
	}
	if cs.gets.Load() == before {
		t.Fatal("GetLog(5) did not reach the store after the run restarted")
	}
}

// TestLogCacheFollowerCatchesUpThroughTheStore runs a 3-replica group whose
// caches hold only a few entries: a follower that was down while the leader
// wrote 300 entries of about 2 KiB catches up (the leader reads what it
// sends from its store, and the follower applies what it read back from its
// own), and the leader's cache stayed within its bound.
func TestLogCacheFollowerCatchesUpThroughTheStore(t *testing.T) {
	const bound = 8 << 10
	// The same settings for the follower when it comes back.
	small := func(c *Config) {
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		c.LogCacheBytes = bound
	}
	rs := clusterOf3(t, small)
	leader := leaderOf(t, rs)
	down := followerOf(rs, leader)
	down.close(t)
	pad := strings.Repeat("x", 2000)
	const n = 300
	for i := 1; i <= n; i++ {
		reps := apply(t, leader.Shard, unit(cmd("T.INCR", pad)))
		if got, ok := reps[0].(engine.Integer); !ok || int64(got) != int64(i) {
			t.Fatalf("write %d: reply %v", i, reps[0])
		}
		if _, cn, b := leader.logs.cached(); b > bound && cn > 1 {
			t.Fatalf("leader's cache holds %d bytes in %d entries, bound %d", b, cn, bound)
		}
	}
	back := openReplica(t, down.dir, down.id, string(down.addr), small)
	waitFor(t, 30*time.Second, "the restarted follower to apply every write", func() bool {
		var v int
		back.StaleRead(func(e *engine.Engine) { v = e.Config().NodeMaxEntries })
		return v == n
	})
	if _, cn, b := back.logs.cached(); b > bound && cn > 1 {
		t.Fatalf("follower's cache holds %d bytes in %d entries, bound %d", b, cn, bound)
	}
}
