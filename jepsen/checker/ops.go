package checker

import (
	"sort"

	"github.com/raftstream/raftstream/jepsen/history"
)

// isRead reports whether o returns stream entries read without a group.
func isRead(o *history.Op) bool { return o.F == history.XRange || o.F == history.XRead }

// returnsEntries reports whether o's result lists entries.
func returnsEntries(o *history.Op) bool {
	return isRead(o) || o.F == history.XReadGroup || o.F == history.XAutoClaim
}

// byKey groups the operations satisfying keep by stream, in invocation order,
// with the keys sorted so results do not depend on map order.
func byKey(ops []history.Op, keep func(*history.Op) bool) (keys []string, m map[string][]*history.Op) {
	m = map[string][]*history.Op{}
	for i := range ops {
		o := &ops[i]
		if !keep(o) {
			continue
		}
		if _, ok := m[o.Key]; !ok {
			keys = append(keys, o.Key)
		}
		m[o.Key] = append(m[o.Key], o)
	}
	sort.Strings(keys)
	return keys, m
}

// finalRead returns the ok full read of a stream that completed last, or nil.
func finalRead(ops []*history.Op) *history.Op {
	var f *history.Op
	for _, o := range ops {
		if isRead(o) && o.Type == history.OK && o.Value.Full && (f == nil || o.Done > f.Done) {
			f = o
		}
	}
	return f
}

// realTimeMax walks ops in invocation order and, for each, reports the
// operation with the greatest key among those that returned before it was
// invoked (nil if none). key returns false for ops that carry no key.
func realTimeMax(ops []*history.Op, key func(*history.Op) (history.ID, bool),
	visit func(o, max *history.Op, maxID history.ID)) {
	byReturn := append([]*history.Op(nil), ops...)
	sort.SliceStable(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	byCall := append([]*history.Op(nil), ops...)
	sort.SliceStable(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	var max *history.Op
	var maxID history.ID
	j := 0
	for _, o := range byCall {
		for ; j < len(byReturn) && byReturn[j].Return < o.Call; j++ {
			if id, ok := key(byReturn[j]); ok && (max == nil || maxID.Less(id)) {
				max, maxID = byReturn[j], id
			}
		}
		visit(o, max, maxID)
	}
}

// idOf parses an ID already validated by history.Validate.
func idOf(s string) history.ID { return history.MustID(s) }

func idxs(ops ...*history.Op) []int64 {
	var r []int64
	for _, o := range ops {
		if o != nil {
			r = append(r, o.Index)
		}
	}
	return r
}
