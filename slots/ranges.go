package slots

import "fmt"

// Range is an inclusive slot range [First, Last].
type Range struct{ First, Last int }

// Contains reports whether slot lies in r.
func (r Range) Contains(slot int) bool { return slot >= r.First && slot <= r.Last }

// Ranges splits the Count slots into n contiguous ranges, shard i owning
// Ranges(n)[i]; range sizes differ by at most one. It panics unless
// 1 <= n <= Count.
func Ranges(n int) []Range {
	if n < 1 || n > Count {
		panic(fmt.Sprintf("slots: shard count %d out of range 1..%d", n, Count))
	}
	rs := make([]Range, n)
	for i := range rs {
		rs[i] = Range{First: i * Count / n, Last: (i+1)*Count/n - 1}
	}
	return rs
}

// Map is a slot→shard table for a fixed shard count. The zero Map is not
// usable; build one with NewMap. A Map is immutable and safe for concurrent
// use.
type Map struct {
	shards int
	ranges []Range
	shard  [Count]uint16
}

// NewMap returns the slot→shard map of n contiguous ranges (see Ranges).
func NewMap(n int) *Map {
	m := &Map{shards: n, ranges: Ranges(n)}
	for i, r := range m.ranges {
		for s := r.First; s <= r.Last; s++ {
			m.shard[s] = uint16(i)
		}
	}
	return m
}

// Shards returns the shard count.
func (m *Map) Shards() int { return m.shards }

// Shard returns the shard owning slot. It panics if slot is out of range.
func (m *Map) Shard(slot int) int { return int(m.shard[slot]) }

// ShardOfKey returns the shard owning key's slot.
func (m *Map) ShardOfKey(key []byte) int { return int(m.shard[Of(key)]) }

// Range returns the slot range of shard i.
func (m *Map) Range(i int) Range { return m.ranges[i] }
