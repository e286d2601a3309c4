package slots

import (
	"fmt"
	"slices"
)

// Range is an inclusive slot range [First, Last].
type Range struct{ First, Last int }

// Contains reports whether slot lies in r.
func (r Range) Contains(slot int) bool { return slot >= r.First && slot <= r.Last }

// Len is the number of slots in r.
func (r Range) Len() int { return r.Last - r.First + 1 }

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

// Run is a maximal range of consecutive slots owned by one shard: the rows
// of CLUSTER SLOTS, and how a slot→shard map is written down.
type Run struct {
	First int `json:"first"`
	Last  int `json:"last"`
	Shard int `json:"shard"`
}

// Range is r's slot range.
func (r Run) Range() Range { return Range{r.First, r.Last} }

// Map is a slot→shard table: every slot is owned by exactly one shard. The
// zero Map is not usable; build one with NewMap or FromRuns. A Map is
// immutable and safe for concurrent use.
type Map struct {
	shards int // highest shard number + 1
	shard  [Count]uint16
	runs   []Run
}

// MaxShard is the highest shard number a Map can hold.
const MaxShard = 1<<16 - 1

// NewMap returns the slot→shard map of n contiguous ranges (see Ranges):
// the map of a new cluster of n shards.
func NewMap(n int) *Map {
	rs := Ranges(n)
	runs := make([]Run, len(rs))
	for i, r := range rs {
		runs[i] = Run{First: r.First, Last: r.Last, Shard: i}
	}
	m, _ := FromRuns(runs)
	return m
}

// FromRuns builds the map the runs describe. The runs must cover every slot
// exactly once (in any order); adjacent runs of one shard are merged.
func FromRuns(runs []Run) (*Map, error) {
	rs := slices.Clone(runs)
	slices.SortFunc(rs, func(a, b Run) int { return a.First - b.First })
	m := &Map{}
	next := 0
	for _, r := range rs {
		switch {
		case r.First != next:
			if r.First < next {
				return nil, fmt.Errorf("slots: run %d-%d overlaps slot %d", r.First, r.Last, next-1)
			}
			return nil, fmt.Errorf("slots: slots %d-%d are not assigned", next, r.First-1)
		case r.Last < r.First || r.Last >= Count:
			return nil, fmt.Errorf("slots: bad run %d-%d", r.First, r.Last)
		case r.Shard < 0 || r.Shard > MaxShard:
			return nil, fmt.Errorf("slots: run %d-%d: bad shard %d", r.First, r.Last, r.Shard)
		}
		for s := r.First; s <= r.Last; s++ {
			m.shard[s] = uint16(r.Shard)
		}
		m.shards = max(m.shards, r.Shard+1)
		next = r.Last + 1
	}
	if next != Count {
		return nil, fmt.Errorf("slots: slots %d-%d are not assigned", next, Count-1)
	}
	m.runs = runsOf(&m.shard)
	return m, nil
}

// runsOf lists the maximal runs of an assignment in slot order.
func runsOf(a *[Count]uint16) []Run {
	var out []Run
	for s := 0; s < Count; {
		e := s
		for e+1 < Count && a[e+1] == a[s] {
			e++
		}
		out = append(out, Run{First: s, Last: e, Shard: int(a[s])})
		s = e + 1
	}
	return out
}

// Shards returns the highest shard number owning a slot, plus one.
func (m *Map) Shards() int { return m.shards }

// Shard returns the shard owning slot. It panics if slot is out of range.
func (m *Map) Shard(slot int) int { return int(m.shard[slot]) }

// ShardOfKey returns the shard owning key's slot.
func (m *Map) ShardOfKey(key []byte) int { return int(m.shard[Of(key)]) }

// Runs returns the map's maximal runs in slot order (shared: do not
// modify).
func (m *Map) Runs() []Run { return m.runs }

// RangesOf returns the slot ranges shard owns, in slot order (none for a
// shard that owns no slot).
func (m *Map) RangesOf(shard int) []Range {
	var out []Range
	for _, r := range m.runs {
		if r.Shard == shard {
			out = append(out, r.Range())
		}
	}
	return out
}

// Owners returns how many distinct shards own at least one slot.
func (m *Map) Owners() int {
	seen := map[int]bool{}
	for _, r := range m.runs {
		seen[r.Shard] = true
	}
	return len(seen)
}

// Assign returns a copy of m in which the slots of r belong to shard.
func (m *Map) Assign(r Range, shard int) (*Map, error) {
	if r.First < 0 || r.Last >= Count || r.Last < r.First {
		return nil, fmt.Errorf("slots: bad range %d-%d", r.First, r.Last)
	}
	if shard < 0 || shard > MaxShard {
		return nil, fmt.Errorf("slots: bad shard %d", shard)
	}
	c := &Map{shard: m.shard}
	for s := r.First; s <= r.Last; s++ {
		c.shard[s] = uint16(shard)
	}
	c.runs = runsOf(&c.shard)
	for _, x := range c.runs {
		c.shards = max(c.shards, x.Shard+1)
	}
	return c, nil
}

// Equal reports whether m and o assign every slot alike.
func (m *Map) Equal(o *Map) bool { return m.shard == o.shard }
