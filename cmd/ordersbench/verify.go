package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EntryID is a stream entry ID (milliseconds-sequence), parsed so that the
// verifier can compare and store it compactly.
type EntryID struct{ Ms, Seq uint64 }

// ParseEntryID parses "ms-seq".
func ParseEntryID(s string) (EntryID, error) {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		return EntryID{}, fmt.Errorf("bad entry ID %q", s)
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil {
		return EntryID{}, fmt.Errorf("bad entry ID %q", s)
	}
	return EntryID{a, b}, nil
}

func (e EntryID) String() string { return fmt.Sprintf("%d-%d", e.Ms, e.Seq) }

// Less orders IDs as the stream does.
func (e EntryID) Less(o EntryID) bool { return e.Ms < o.Ms || (e.Ms == o.Ms && e.Seq < o.Seq) }

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

// Produced records one XADD that was acknowledged with an entry ID.
type Produced struct {
	Key  OrderKey
	Part int32
	ID   EntryID
}

// Consumed records one delivery of an entry of this run to a group.
// Claimed marks a delivery obtained through XAUTOCLAIM rather than
// XREADGROUP ">" (so it is exempt from the ordering check).
type Consumed struct {
	Key     OrderKey
	Part    int32
	ID      EntryID
	Claimed bool
}

// History is everything a run observed, the input of Verify.
type History struct {
	Groups []string
	// Acked are the produces acknowledged by the server.
	Acked []Produced
	// Unknown are produces whose reply was an error or never came: they may
	// or may not have been written.
	Unknown []OrderKey
	// Consumed holds each group's deliveries; for each partition, in the
	// order they were delivered (one reader owns a group's partition).
	Consumed map[string][]Consumed
	// ClientRetries is set when the client may resend a write whose reply
	// was lost (the cluster client does on network errors): a second copy of
	// an acknowledged order is then at-least-once production, not a fault.
	ClientRetries bool
	// FirstID, when non-nil, holds each partition's first entry ID at the
	// end of the run (MAXLEN trimming); ok=false for an empty stream.
	FirstID map[int32]EntryID
}

// GroupVerdict is the verification of one consumer group.
type GroupVerdict struct {
	Group string `json:"group"`
	// Deliveries counts every delivery; Unique the distinct acked entries.
	Deliveries int `json:"deliveries"`
	Unique     int `json:"unique"`
	// Missing acked entries never delivered (an error); Trimmed ones were
	// removed by MAXLEN before a consumer reached them (not an error).
	Missing int `json:"missing"`
	Trimmed int `json:"trimmed"`
	// Duplicates counts redeliveries beyond the first (at-least-once, not an
	// error); DuplicatedEntries the distinct entries redelivered.
	Duplicates        int `json:"duplicates"`
	DuplicatedEntries int `json:"duplicated_entries"`
	// UnknownOutcome counts deliveries of produces whose reply was an error:
	// the write did happen (not an error).
	UnknownOutcome int `json:"unknown_outcome_delivered"`
	// DuplicateWrites counts deliveries of a second copy of an acknowledged
	// order (same partition, another entry ID): an error unless the client
	// may retry writes.
	DuplicateWrites int `json:"duplicate_writes"`
	// Stray counts deliveries that match no produce: a phantom entry or an
	// entry in the wrong partition (an error).
	Stray int `json:"stray"`
	// OutOfOrder counts first deliveries from a partition whose ID is not
	// greater than the previous one (an error).
	OutOfOrder int `json:"out_of_order"`
	// Examples lists a few offending order keys for each error class.
	Examples []string `json:"examples,omitempty"`
}

// Verdict is the result of Verify.
type Verdict struct {
	Acked   int            `json:"acked"`
	Unknown int            `json:"unknown_outcome"`
	Groups  []GroupVerdict `json:"groups"`
	OK      bool           `json:"ok"`
}

const maxExamples = 5

// Verify checks that every acknowledged produce was consumed exactly once by
// every group. Missing, stray and out-of-order deliveries make the verdict
// fail; at-least-once redeliveries, trimmed entries and deliveries of
// unknown-outcome produces are reported but allowed.
func Verify(h History) Verdict {
	idx := make(map[OrderKey]int, len(h.Acked))
	for i, p := range h.Acked {
		idx[p.Key] = i
	}
	unknown := make(map[OrderKey]bool, len(h.Unknown))
	for _, k := range h.Unknown {
		unknown[k] = true
	}
	v := Verdict{Acked: len(h.Acked), Unknown: len(h.Unknown), OK: true}
	seen := make([]uint32, len(h.Acked))
	for _, g := range h.Groups {
		clear(seen)
		gv := GroupVerdict{Group: g}
		example := func(class string, k OrderKey) {
			if len(gv.Examples) < maxExamples {
				gv.Examples = append(gv.Examples, class+" "+k.String())
			}
		}
		last := map[int32]EntryID{}
		unknownSeen := map[OrderKey]bool{}
		for _, c := range h.Consumed[g] {
			gv.Deliveries++
			if !c.Claimed {
				if prev, ok := last[c.Part]; ok && !prev.Less(c.ID) {
					gv.OutOfOrder++
					example("out-of-order", c.Key)
				}
				last[c.Part] = c.ID
			}
			i, ok := idx[c.Key]
			if !ok {
				if unknown[c.Key] && !unknownSeen[c.Key] {
					unknownSeen[c.Key] = true
					gv.UnknownOutcome++
					continue
				}
				if unknown[c.Key] {
					gv.Duplicates++
					continue
				}
				gv.Stray++
				example("stray", c.Key)
				continue
			}
			if p := h.Acked[i]; p.Part == c.Part && p.ID != c.ID {
				gv.DuplicateWrites++
				if !h.ClientRetries {
					example("duplicate-write", c.Key)
				}
				continue
			} else if p.Part != c.Part {
				gv.Stray++
				example("stray", c.Key)
				continue
			}
			seen[i]++
			switch seen[i] {
			case 1:
				gv.Unique++
			case 2:
				gv.DuplicatedEntries++
				gv.Duplicates++
			default:
				gv.Duplicates++
			}
		}
		for i, n := range seen {
			if n > 0 {
				continue
			}
			p := h.Acked[i]
			if first, ok := h.FirstID[p.Part]; h.FirstID != nil && (!ok || p.ID.Less(first)) {
				gv.Trimmed++
				continue
			}
			gv.Missing++
			example("missing", p.Key)
		}
		slices.Sort(gv.Examples)
		if gv.Missing > 0 || gv.Stray > 0 || gv.OutOfOrder > 0 || (gv.DuplicateWrites > 0 && !h.ClientRetries) {
			v.OK = false
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}
