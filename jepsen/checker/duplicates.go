package checker

import (
	"fmt"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Duplicates checks that no ok read (XRANGE, XREAD, XREADGROUP, XAUTOCLAIM)
// shows one value or one entry ID twice. This is also how an unknown-outcome
// write is held to "present once or absent": a retried or replayed append
// would show its value twice. With Options.Resends a value may be in a read
// twice (the client appended it twice); an ID may not.
func Duplicates(in *Input) Result {
	var as []Anomaly
	reads := 0
	for i := range in.Ops {
		o := &in.Ops[i]
		if !returnsEntries(o) || o.Type != history.OK {
			continue
		}
		reads++
		vals := map[string]int{}
		ids := map[string]int{}
		for j, e := range o.Value.Entries {
			if p, ok := vals[e.Value]; ok && !in.Options.Resends {
				as = append(as, Anomaly{Kind: "duplicate-value", Key: o.Key, Ops: idxs(o),
					Msg: fmt.Sprintf("%s shows value %q at positions %d (%s) and %d (%s)", o, e.Value, p, o.Value.Entries[p].ID, j, e.ID)})
			} else {
				vals[e.Value] = j
			}
			if p, ok := ids[e.ID]; ok {
				as = append(as, Anomaly{Kind: "duplicate-id", Key: o.Key, Ops: idxs(o),
					Msg: fmt.Sprintf("%s shows entry ID %s at positions %d and %d", o, e.ID, p, j)})
			} else {
				ids[e.ID] = j
			}
		}
	}
	return verdict("duplicates", as, false, []string{fmt.Sprintf("%d reads checked", reads)})
}
