package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
)

// OrderKey identifies one order of this run: the producer index in the high
// 24 bits and the producer's sequence number in the low 40.
type OrderKey uint64

func newOrderKey(producer int, seq uint64) OrderKey { return OrderKey(uint64(producer)<<40 | seq) }

func (k OrderKey) String() string { return fmt.Sprintf("%d-%d", uint64(k)>>40, uint64(k)&(1<<40-1)) }

// orderID is the order_id field of an order: the run tag, then the key, so
// entries left in the streams by other runs are recognised and ignored.
func orderID(run string, k OrderKey) string { return run + "-" + k.String() }

// parseOrderID returns the key of an order_id written by run; ok is false
// for an order_id of another run or not written by ordersbench.
func parseOrderID(run, s string) (OrderKey, bool) {
	rest, found := strings.CutPrefix(s, run+"-")
	if !found {
		return 0, false
	}
	p, q, found := strings.Cut(rest, "-")
	if !found {
		return 0, false
	}
	pi, err1 := strconv.ParseUint(p, 10, 24)
	qi, err2 := strconv.ParseUint(q, 10, 40)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return newOrderKey(int(pi), qi), true
}

// The records below are what -verify keeps while the workload runs: small
// and without pointers, appended by each goroutine to its own slice. Times
// are nanoseconds since the run began (monotonic). Verify turns them into
// jepsen history operations one stream at a time.

// XAdd records one XADD: the order, its partition, the entry ID the server
// returned (Acked), or none when the reply was an error (unknown outcome),
// and when its pipeline was sent and answered.
type XAdd struct {
	Key          OrderKey
	Part         int32
	Acked        bool
	ID           history.ID
	Call, Return int64
}

// Delivery is one entry of this run handed to a consumer.
type Delivery struct {
	Key OrderKey
	ID  history.ID
}

// Read records one XREADGROUP ">" (or, Claimed, one XAUTOCLAIM) of a group
// on one partition that returned entries of this run, or an XREADGROUP ">"
// sent after production ended that returned nothing at all (which is how a
// drained group shows).
type Read struct {
	Group        string
	Reader       int32
	Part         int32
	Claimed      bool
	Call, Return int64
	Entries      []Delivery
}

// History is everything a run observed, the input of Verify.
type History struct {
	// Streams is the stream of each partition.
	Streams []string
	Groups  []string
	XAdds   []XAdd
	Reads   []Read
	// Final holds, when streams are trimmed (-maxlen), each partition's
	// entries of this run read in full at the end, begun at FinalAt: the
	// entries trimming left. nil without trimming.
	Final   map[int32][]Delivery
	FinalAt int64
	// ClientRetries is set when the client may resend a write whose reply
	// was lost (the cluster client does): a second copy of an order under
	// another entry ID is then at-least-once production, not a fault.
	ClientRetries bool
}

// GroupStats counts one group's deliveries of this run's orders.
type GroupStats struct {
	Group string `json:"group"`
	// Deliveries counts every delivery; Unique the distinct orders
	// delivered; Duplicates the deliveries beyond an order's first
	// (redelivery by XAUTOCLAIM after a lost ack: at-least-once, allowed).
	Deliveries int `json:"deliveries"`
	Unique     int `json:"unique"`
	Duplicates int `json:"duplicates"`
}

// Check is one jepsen checker's verdict over every stream.
type Check struct {
	Name  string        `json:"name"`
	Valid checker.Valid `json:"valid"`
	// Kinds counts the anomalies by kind.
	Kinds map[string]int `json:"kinds,omitempty"`
	// Examples are the first anomalies, and why a stream could not be
	// judged.
	Examples []string `json:"examples,omitempty"`
}

// Verdict is the result of Verify.
type Verdict struct {
	Acked   int          `json:"acked"`
	Unknown int          `json:"unknown_outcome"`
	Groups  []GroupStats `json:"groups"`
	Checks  []Check      `json:"checks"`
	OK      bool         `json:"ok"`
}

const maxExamples = 5

// Verify checks h with the fault-injection suite's checkers (jepsen/checker),
// one stream at a time so that the operations built for them never hold more
// than one stream's:
//
//   - ids: entry IDs increase within every read and across XADD replies in
//     real time; an order is seen under one entry ID only, unless the client
//     retries writes; no read shows an order that was not produced on that
//     partition (a stray or misrouted entry);
//   - duplicates: no read shows an entry twice;
//   - groups: ">" never delivers an entry twice; a group's deliveries never
//     move backwards (out of order); every acknowledged order was delivered
//     to every group (missing), which needs each group's last read of each
//     partition to have come back empty;
//   - lost, with trimming: every acknowledged order not trimmed by MAXLEN is
//     in the stream at the end.
//
// An unknown-outcome XADD may or may not appear; XAUTOCLAIM may redeliver.
// The verdict is OK when every check is Ok: one that cannot judge a stream
// (a group that was not drained) fails it too.
func Verify(h History) Verdict {
	v := Verdict{}
	for _, x := range h.XAdds {
		if x.Acked {
			v.Acked++
		} else {
			v.Unknown++
		}
	}
	xs := make([][]int32, len(h.Streams))
	for i, x := range h.XAdds {
		xs[x.Part] = append(xs[x.Part], int32(i))
	}
	rs := make([][]int32, len(h.Streams))
	for i, r := range h.Reads {
		rs[r.Part] = append(rs[r.Part], int32(i))
	}
	checks := []checker.Checker{{Name: "ids", Check: checker.IDs}, {Name: "duplicates", Check: checker.Duplicates},
		{Name: "groups", Check: checker.Groups}}
	if h.Final != nil {
		checks = append(checks, checker.Checker{Name: "lost", Check: checker.Lost})
	}
	opts := checker.Options{Trims: h.Final != nil, Resends: h.ClientRetries, Groups: h.Groups}
	for _, c := range checks {
		v.Checks = append(v.Checks, Check{Name: c.Name, Valid: checker.Ok})
	}
	for _, g := range h.Groups {
		v.Groups = append(v.Groups, GroupStats{Group: g})
	}
	for p, stream := range h.Streams {
		in := checker.NewInputOps(h.streamOps(int32(p), stream, xs[p], rs[p]), 0, opts)
		for i, c := range checks {
			v.Checks[i].add(c.Check(in), stream)
		}
		h.count(v.Groups, rs[p])
	}
	v.OK = true
	for _, c := range v.Checks {
		v.OK = v.OK && c.Valid == checker.Ok
	}
	return v
}

// streamOps builds the jepsen operations of one partition, in invocation
// order: its XADDs (process: the producer), its reads (process: the
// reader) and, with trimming, the final full read. The value of an entry is
// its order key.
func (h *History) streamOps(p int32, stream string, xadds, reads []int32) []history.Op {
	var ops []history.Op
	for _, i := range xadds {
		x := &h.XAdds[i]
		o := history.Op{Process: history.Process(x.Key >> 40), F: history.XAdd, Key: stream, Type: history.Info,
			Call: x.Call, Return: x.Return, Value: &history.Value{Value: x.Key.String()}}
		if x.Acked {
			o.Type, o.Value.ID = history.OK, x.ID.String()
		}
		ops = append(ops, o)
	}
	for _, i := range reads {
		r := &h.Reads[i]
		o := history.Op{Process: history.Process(r.Reader), F: history.XReadGroup, Key: stream, Type: history.OK,
			Call: r.Call, Return: r.Return, Value: &history.Value{Group: r.Group, From: ">", Entries: entries(r.Entries)}}
		if r.Claimed {
			o.F, o.Value.From = history.XAutoClaim, "0-0"
		}
		ops = append(ops, o)
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	if h.Final != nil {
		ops = append(ops, history.Op{F: history.XRange, Key: stream, Type: history.OK, Call: h.FinalAt,
			Return: h.FinalAt + 1, Value: &history.Value{Full: true, Entries: entries(h.Final[p])}})
	}
	for i := range ops {
		ops[i].Index, ops[i].Done = int64(2*i), int64(2*i+1)
	}
	return ops
}

func entries(ds []Delivery) []history.Entry {
	es := make([]history.Entry, len(ds))
	for i, d := range ds {
		es[i] = history.Entry{ID: d.ID.String(), Value: d.Key.String()}
	}
	return es
}

// count adds one partition's deliveries to each group's stats. An order
// lives in one partition, so distinct orders add up across partitions.
func (h *History) count(gs []GroupStats, reads []int32) {
	for gi := range gs {
		var keys []OrderKey
		for _, i := range reads {
			if r := &h.Reads[i]; r.Group == gs[gi].Group {
				for _, d := range r.Entries {
					keys = append(keys, d.Key)
				}
			}
		}
		slices.Sort(keys)
		gs[gi].Deliveries += len(keys)
		gs[gi].Unique += len(slices.Compact(keys))
		gs[gi].Duplicates = gs[gi].Deliveries - gs[gi].Unique
	}
}

// add folds one stream's result into c: the worst verdict (Illegal over
// Unknown over Ok), the anomalies by kind, and a few examples.
func (c *Check) add(r checker.Result, stream string) {
	if r.Valid == checker.Illegal || c.Valid == checker.Ok {
		c.Valid = r.Valid
	}
	for _, a := range r.Anomalies {
		if c.Kinds == nil {
			c.Kinds = map[string]int{}
		}
		c.Kinds[a.Kind]++
		if len(c.Examples) < maxExamples {
			c.Examples = append(c.Examples, a.Kind+": "+a.Msg)
		}
	}
	if r.Valid == checker.Unknown {
		for _, n := range r.Notes {
			if len(c.Examples) < maxExamples {
				c.Examples = append(c.Examples, stream+": "+n)
			}
		}
	}
}
