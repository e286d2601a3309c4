package checker

import (
	"fmt"
	"sort"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Liveness checks that after the final heal (the last heal no fault
// follows) at least one operation of each kind succeeded: the kinds in
// Options.Liveness, or every client operation kind in the history. Without a
// final heal the verdict is Unknown.
func Liveness(in *Input) Result {
	if in.LastHeal < 0 {
		return verdict("liveness", nil, true, []string{"no final heal in the history"})
	}
	kinds := in.Options.Liveness
	if kinds == nil {
		set := map[history.F]bool{}
		for _, o := range in.Ops {
			if !set[o.F] {
				set[o.F] = true
				kinds = append(kinds, o.F)
			}
		}
		sort.Slice(kinds, func(i, j int) bool { return kinds[i] < kinds[j] })
	}
	var as []Anomaly
	for _, f := range kinds {
		var tried []*history.Op
		ok := false
		for i := range in.Ops {
			o := &in.Ops[i]
			if o.F != f || o.Call < in.LastHeal {
				continue
			}
			if o.Type == history.OK {
				ok = true
				break
			}
			if len(tried) < 5 {
				tried = append(tried, o)
			}
		}
		if !ok {
			as = append(as, Anomaly{Kind: "no-progress", Ops: idxs(tried...),
				Msg: fmt.Sprintf("no %s succeeded after the final heal (%d attempts shown)", f, len(tried))})
		}
	}
	return verdict("liveness", as, false, []string{fmt.Sprintf("final window starts at %.3fs", float64(in.LastHeal)/1e9)})
}
