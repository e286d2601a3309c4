package checker

import (
	"fmt"

	"github.com/raftstream/raftstream/jepsen/history"
)

// IDs checks entry IDs:
//   - read-order: within every ok read the IDs strictly increase;
//   - xadd-order: if an ok XADD returned before another ok XADD on the same
//     stream was invoked, its ID is smaller;
//   - id-mismatch: a value is seen with one ID only (unless
//     Options.Resends), and an ID with one value only, across XADD replies
//     and every read (xadd-idmp retries must return the ID of the first
//     append);
//   - phantom: every value read was the input of some XADD on that stream.
func IDs(in *Input) Result {
	var as []Anomaly
	keys, m := byKey(in.Ops, func(o *history.Op) bool { return o.Type == history.OK || o.F.IsWrite() })
	for _, k := range keys {
		ops := m[k]
		as = append(as, readOrder(ops)...)
		as = append(as, xaddOrder(k, ops)...)
		as = append(as, idConsistency(k, ops, in.Options.Resends)...)
	}
	return verdict("ids", as, false, nil)
}

func readOrder(ops []*history.Op) []Anomaly {
	var as []Anomaly
	for _, o := range ops {
		if !returnsEntries(o) || o.Type != history.OK {
			continue
		}
		es := o.Value.Entries
		for j := 1; j < len(es); j++ {
			if !idOf(es[j-1].ID).Less(idOf(es[j].ID)) {
				as = append(as, Anomaly{Kind: "read-order", Key: o.Key, Ops: idxs(o),
					Msg: fmt.Sprintf("%s: entry %d has ID %s after %s", o, j, es[j].ID, es[j-1].ID)})
				break
			}
		}
	}
	return as
}

func xaddOrder(k string, ops []*history.Op) []Anomaly {
	// Any send of an xadd-idmp value may be the one that appended it (an
	// earlier send of unknown outcome that applied, which a retry's reply
	// then reports), so its real-time constraint starts at the first send.
	first := map[string]int64{}
	for _, o := range ops {
		if o.F == history.XAddIdmp {
			if c, ok := first[o.Value.Value]; !ok || o.Call < c {
				first[o.Value.Value] = o.Call
			}
		}
	}
	var adds []*history.Op
	for _, o := range ops {
		if o.F.IsWrite() && o.Type == history.OK && o.Value.ID != "" {
			if o.F == history.XAddIdmp {
				c := *o
				c.Call = first[o.Value.Value]
				o = &c
			}
			adds = append(adds, o)
		}
	}
	var as []Anomaly
	realTimeMax(adds, func(o *history.Op) (history.ID, bool) { return idOf(o.Value.ID), true },
		func(o, max *history.Op, maxID history.ID) {
			// an xadd-idmp retry returns its first append's ID again; a
			// different ID for it is an id-mismatch, reported there
			retry := max != nil && o.F == history.XAddIdmp && max.Value.Value == o.Value.Value
			if max != nil && !retry && !maxID.Less(idOf(o.Value.ID)) {
				as = append(as, Anomaly{Kind: "xadd-order", Key: k, Ops: idxs(max, o),
					Msg: fmt.Sprintf("%s got ID %s, not above ID %s of %s which returned before it was invoked",
						o, o.Value.ID, maxID, max)})
			}
		})
	return as
}

func idConsistency(k string, ops []*history.Op, resends bool) []Anomaly {
	type sighting struct {
		other string // the ID of a value, or the value of an ID
		op    *history.Op
	}
	written := map[string]bool{}
	for _, o := range ops {
		if o.F.IsWrite() {
			written[o.Value.Value] = true
		}
	}
	byValue := map[string]sighting{}
	byID := map[string]sighting{}
	reported := map[string]bool{}
	var as []Anomaly
	see := func(o *history.Op, id, val string) {
		if s, ok := byValue[val]; !ok {
			byValue[val] = sighting{id, o}
		} else if s.other != id && !resends && !reported["v"+val] {
			reported["v"+val] = true
			as = append(as, Anomaly{Kind: "id-mismatch", Key: k, Ops: idxs(s.op, o),
				Msg: fmt.Sprintf("value %q has ID %s in %s but %s in %s", val, s.other, s.op, id, o)})
		}
		if s, ok := byID[id]; !ok {
			byID[id] = sighting{val, o}
		} else if s.other != val && !reported["i"+id] {
			reported["i"+id] = true
			as = append(as, Anomaly{Kind: "id-mismatch", Key: k, Ops: idxs(s.op, o),
				Msg: fmt.Sprintf("ID %s holds %q in %s but %q in %s", id, s.other, s.op, val, o)})
		}
		if !written[val] && !reported["p"+val] {
			reported["p"+val] = true
			as = append(as, Anomaly{Kind: "phantom", Key: k, Ops: idxs(o),
				Msg: fmt.Sprintf("%s shows value %q (ID %s) that no XADD on %q wrote", o, val, id, k)})
		}
	}
	for _, o := range ops {
		if o.Type != history.OK {
			continue
		}
		if o.F.IsWrite() && o.Value.ID != "" {
			see(o, o.Value.ID, o.Value.Value)
		}
		if returnsEntries(o) {
			for _, e := range o.Value.Entries {
				see(o, e.ID, e.Value)
			}
		}
	}
	return as
}
