package checker

import (
	"fmt"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Lost checks that every acknowledged XADD (xadd or xadd-idmp with an ok
// completion) appears in the final full read of its stream, when that read
// began after the XADD returned. XADDs still running when the final read
// began are not judged; a stream with acknowledged XADDs but no full read
// makes the verdict Unknown. With Options.Trims, an entry whose ID is below
// the final read's first ID counts as trimmed, not lost.
func Lost(in *Input) Result {
	keys, m := byKey(in.Ops, func(o *history.Op) bool {
		return (o.F.IsWrite() && o.Type == history.OK) || isRead(o)
	})
	var as []Anomaly
	var notes []string
	unknown := false
	checked, unjudged := 0, 0
	for _, k := range keys {
		fin := finalRead(m[k])
		seen := map[string]bool{}
		if fin != nil {
			for _, e := range fin.Value.Entries {
				seen[e.Value] = true
			}
		}
		for _, o := range m[k] {
			if !o.F.IsWrite() {
				continue
			}
			if fin == nil {
				unknown = true
				notes = append(notes, fmt.Sprintf("stream %q: acknowledged writes but no full read", k))
				break
			}
			if o.Return >= fin.Call {
				unjudged++
				continue
			}
			checked++
			if seen[o.Value.Value] {
				continue
			}
			if in.Options.Trims && o.Value.ID != "" && (len(fin.Value.Entries) == 0 ||
				idOf(o.Value.ID).Less(idOf(fin.Value.Entries[0].ID))) {
				continue
			}
			as = append(as, Anomaly{Kind: "lost", Key: k, Ops: idxs(o, fin),
				Msg: fmt.Sprintf("acknowledged %s of %q (id %s) is missing from the final read %s",
					o.F, o.Value.Value, o.Value.ID, fin)})
		}
	}
	notes = append(notes, fmt.Sprintf("%d acknowledged writes checked, %d concurrent with the final read", checked, unjudged))
	return verdict("lost", as, unknown, notes)
}
