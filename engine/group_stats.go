package engine

import "math"

// Figures of a stream's consumer groups for monitoring (the RESP server's
// /metrics series), read without building replies. Both functions only
// read: they run under the FSM read lock, concurrently with other reads.

// GroupStat is one consumer group's backlog: XINFO GROUPS's lag and
// pending.
type GroupStat struct {
	Name string
	// Lag is the entries not yet delivered to the group; LagKnown is false
	// where XINFO GROUPS reports a null lag (it cannot be known).
	Lag      int64
	LagKnown bool
	// Pending is the size of the group's PEL.
	Pending int64
}

// StreamStats returns the length of the stream at key and appends its
// groups' figures, in name order, to groups. ok is false when key holds no
// stream.
func (e *Engine) StreamStats(key []byte, groups []GroupStat) (length int64, out []GroupStat, ok bool) {
	v, found := e.keys[string(key)]
	if !found || v.Kind != KindStream {
		return 0, groups, false
	}
	s := v.Stream
	for _, g := range s.Groups {
		lag, known := s.lag(g)
		groups = append(groups, GroupStat{Name: g.Name, Lag: lag, LagKnown: known, Pending: int64(g.PEL.Len())})
	}
	return int64(s.Length), groups, true
}

// OldestDelivery scans the PEL of group on the stream at key from ID start
// on, visiting at most max entries, and returns the earliest delivery time
// (Unix ms) among them (math.MaxInt64 if it visited none). When more is
// true the scan stopped at max: resume it from next. A missing stream or
// group is an empty PEL. A caller scans a large PEL in several calls so
// that no one read holds the engine for long.
func (e *Engine) OldestDelivery(key []byte, group string, start ID, max int) (oldest int64, next ID, more bool) {
	oldest = math.MaxInt64
	v, found := e.keys[string(key)]
	if !found || v.Kind != KindStream {
		return oldest, start, false
	}
	g := v.Stream.lookupGroup([]byte(group))
	if g == nil {
		return oldest, start, false
	}
	cu := g.PEL.Seek(start)
	for visited := 0; ; visited++ {
		nk, ok := cu.Next()
		if !ok {
			return oldest, start, false
		}
		if visited == max {
			return oldest, nk.ID, true
		}
		oldest = min(oldest, nk.DeliveryTime)
	}
}
