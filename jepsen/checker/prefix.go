package checker

import (
	"fmt"
	"sort"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Prefix checks per stream that reads agree on one append-only log. The log
// M is the union of every entry any ok read returned, in ID order. Then:
//   - every full read is a contiguous run of M starting at M's first entry
//     (non-prefix otherwise: it skipped an entry another read saw); with
//     Options.Trims the run may start later (a trimmed prefix);
//   - a partial XREAD (from an ID) is a contiguous run of M starting at the
//     first entry of M above its start ID;
//   - a full read that began after another full read returned ends no
//     earlier (and, with trims, starts no earlier) than it (regression).
//
// Read order and ID/value agreement are the ids checker's concern; here an
// entry is identified by its ID.
func Prefix(in *Input) Result {
	var as []Anomaly
	keys, m := byKey(in.Ops, func(o *history.Op) bool { return isRead(o) && o.Type == history.OK })
	fulls := 0
	for _, k := range keys {
		reads := m[k]
		log, pos, holder := mergedLog(reads)
		var full []*history.Op
		for _, o := range reads {
			es := o.Value.Entries
			if o.Value.Full {
				full = append(full, o)
			}
			if len(es) == 0 {
				continue
			}
			start := pos[es[0].ID]
			want := 0
			switch {
			case o.Value.Full && in.Options.Trims:
				want = start
			case !o.Value.Full:
				from, err := history.ParseID(o.Value.From)
				if err != nil {
					continue // "$" or unrecorded: no start to check
				}
				want = sort.Search(len(log), func(i int) bool { return from.Less(log[i]) })
			}
			if start != want && want >= len(log) {
				as = append(as, Anomaly{Kind: "non-prefix", Key: k, Ops: idxs(o),
					Msg: fmt.Sprintf("%s starts at %s, not above its start ID %s", o, es[0].ID, o.Value.From)})
				continue
			}
			if start != want {
				as = append(as, Anomaly{Kind: "non-prefix", Key: k, Ops: idxs(o, holder[log[want]]),
					Msg: fmt.Sprintf("%s starts at %s, skipping %s seen by %s", o, es[0].ID, log[want], holder[log[want]])})
				continue
			}
			for j, e := range es {
				if p := pos[e.ID]; p != start+j && start+j >= len(log) {
					as = append(as, Anomaly{Kind: "non-prefix", Key: k, Ops: idxs(o),
						Msg: fmt.Sprintf("%s has %s at position %d, out of log order", o, e.ID, j)})
					break
				} else if p != start+j {
					miss := log[start+j]
					as = append(as, Anomaly{Kind: "non-prefix", Key: k, Ops: idxs(o, holder[miss]),
						Msg: fmt.Sprintf("%s has %s at position %d, skipping %s seen by %s", o, e.ID, j, miss, holder[miss])})
					break
				}
			}
		}
		fulls += len(full)
		span := func(o *history.Op) (int, int) {
			es := o.Value.Entries
			if len(es) == 0 {
				return -1, 0
			}
			return pos[es[0].ID], pos[es[len(es)-1].ID] + 1
		}
		// realTimeMax orders by an ID; encode (end) as an ID to reuse it.
		realTimeMax(full, func(o *history.Op) (history.ID, bool) {
			_, end := span(o)
			return history.ID{Ms: uint64(end)}, true
		}, func(o, max *history.Op, maxEnd history.ID) {
			if _, end := span(o); max != nil && uint64(end) < maxEnd.Ms {
				as = append(as, Anomaly{Kind: "regression", Key: k, Ops: idxs(max, o),
					Msg: fmt.Sprintf("%s read %d entries, fewer than the %d of %s which returned before it began",
						o, len(o.Value.Entries), len(max.Value.Entries), max)})
			}
		})
		if in.Options.Trims {
			realTimeMax(full, func(o *history.Op) (history.ID, bool) {
				s, _ := span(o)
				return history.ID{Ms: uint64(s)}, s >= 0
			}, func(o, max *history.Op, maxStart history.ID) {
				if s, _ := span(o); max != nil && s >= 0 && uint64(s) < maxStart.Ms {
					as = append(as, Anomaly{Kind: "regression", Key: k, Ops: idxs(max, o),
						Msg: fmt.Sprintf("%s starts at %s, before the first entry of %s which returned before it began (an untrim)",
							o, o.Value.Entries[0].ID, max)})
				}
			})
		}
	}
	return verdict("prefix", as, false, []string{fmt.Sprintf("%d full reads checked", fulls)})
}

// mergedLog returns the IDs of every entry in reads, sorted, with each ID's
// position and the first read that showed it.
func mergedLog(reads []*history.Op) (log []history.ID, pos map[string]int, holder map[history.ID]*history.Op) {
	holder = map[history.ID]*history.Op{}
	for _, o := range reads {
		for _, e := range o.Value.Entries {
			id := idOf(e.ID)
			if _, ok := holder[id]; !ok {
				holder[id] = o
				log = append(log, id)
			}
		}
	}
	sort.Slice(log, func(i, j int) bool { return log[i].Less(log[j]) })
	pos = map[string]int{}
	for _, o := range reads {
		for _, e := range o.Value.Entries {
			pos[e.ID] = sort.Search(len(log), func(i int) bool { return !log[i].Less(idOf(e.ID)) })
		}
	}
	return log, pos, holder
}
