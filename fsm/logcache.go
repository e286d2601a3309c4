package fsm

import (
	"sync"

	"github.com/hashicorp/raft"
)

// logCache is the raft.LogStore a shard's Raft group writes and reads its log
// through: the shard's store, with the most recent entries also kept in
// memory. It replaces raft.LogCache, which keeps a fixed number of entries
// whatever their size: our entries are batches of up to MaxBatchBytes, so 256
// of them could pin 256 MiB per shard, and it keeps the *raft.Log that raft
// handed to StoreLogs, which on the leader lives inside the proposal's future
// and so also pins the future's replies.
//
// This cache keeps a contiguous run of the newest entries, bounded both by
// count (maxEntries) and by size (maxBytes, counted as entrySize): the oldest
// are dropped first, and the newest entry is kept even when it alone is over
// maxBytes. What raft reads from it most is that tail: the entries a follower
// is about to apply, and those the leader sends to a follower that is a few
// entries behind. Anything older falls through to the store. The cache holds
// copies of the raft.Log structs (sharing Data, which raft never modifies), so
// it pins only the entries themselves.
type logCache struct {
	store      raft.LogStore
	maxBytes   int
	maxEntries int

	mu    sync.RWMutex
	ring  []raft.Log // circular; len(ring) == maxEntries
	head  int        // ring index of the oldest cached entry
	n     int        // cached entries
	bytes int        // sum of entrySize over the cached entries
}

// logEntryOverhead approximates what one cached entry costs beyond its
// payload: the raft.Log struct and slice headers.
const logEntryOverhead = 96

// entrySize is what a cached entry counts against maxBytes.
func entrySize(l *raft.Log) int { return len(l.Data) + len(l.Extensions) + logEntryOverhead }

func newLogCache(store raft.LogStore, maxEntries, maxBytes int) *logCache {
	return &logCache{store: store, maxBytes: maxBytes, maxEntries: maxEntries, ring: make([]raft.Log, maxEntries)}
}

var _ raft.LogStore = (*logCache)(nil)

// IsMonotonic passes the store's raft.MonotonicLogStore answer through, as
// raft.LogCache does.
func (c *logCache) IsMonotonic() bool {
	m, ok := c.store.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (c *logCache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }
func (c *logCache) LastIndex() (uint64, error)  { return c.store.LastIndex() }

// at returns the i-th cached entry, oldest first. c.mu is held.
func (c *logCache) at(i int) *raft.Log { return &c.ring[(c.head+i)%len(c.ring)] }

// GetLog answers from memory when idx is cached, else from the store.
func (c *logCache) GetLog(idx uint64, log *raft.Log) error {
	c.mu.RLock()
	if c.n > 0 {
		first := c.at(0).Index
		if idx >= first && idx-first < uint64(c.n) {
			*log = *c.at(int(idx - first))
			c.mu.RUnlock()
			return nil
		}
	}
	c.mu.RUnlock()
	return c.store.GetLog(idx, log)
}

func (c *logCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

// StoreLogs writes to the store and, once that succeeded, caches the entries.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		if c.n > 0 && c.at(c.n-1).Index+1 != l.Index {
			// Not the next index (a follower overwrote its tail, or the
			// log restarted after a snapshot install): start over, so that
			// the cached run stays contiguous.
			c.clear()
		}
		if c.n == len(c.ring) {
			c.dropOldest()
		}
		*c.at(c.n) = *l
		c.n++
		c.bytes += entrySize(l)
		for c.n > 1 && c.bytes > c.maxBytes {
			c.dropOldest()
		}
	}
	return nil
}

// DeleteRange removes [min, max] from the store and from the cache.
func (c *logCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	for c.n > 0 && c.at(0).Index >= min && c.at(0).Index <= max {
		c.dropOldest()
	}
	for c.n > 0 && c.at(c.n-1).Index >= min && c.at(c.n-1).Index <= max {
		c.n--
		c.bytes -= entrySize(c.at(c.n))
		*c.at(c.n) = raft.Log{}
	}
	if c.n > 0 && c.at(0).Index < min && c.at(c.n-1).Index > max {
		c.clear() // a hole in the middle: keep the run contiguous
	}
	c.mu.Unlock()
	return c.store.DeleteRange(min, max)
}

// dropOldest evicts the oldest cached entry. c.mu is held, c.n > 0.
func (c *logCache) dropOldest() {
	l := c.at(0)
	c.bytes -= entrySize(l)
	*l = raft.Log{} // let go of Data
	c.head = (c.head + 1) % len(c.ring)
	c.n--
}

// clear empties the cache. c.mu is held.
func (c *logCache) clear() {
	for c.n > 0 {
		c.dropOldest()
	}
	c.head = 0
}

// cached reports the cached run (first index, count, bytes): tests and Stats.
func (c *logCache) cached() (first uint64, n, bytes int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.n > 0 {
		first = c.at(0).Index
	}
	return first, c.n, c.bytes
}
