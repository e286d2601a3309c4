package checker

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/raftstream/raftstream/jepsen/history"
)

// randomStream simulates one stream under concurrent clients: each
// operation takes effect at a random point of its window (an unknown-outcome
// append possibly never), reads return the list at their point. With
// corrupt, one read is then altered or moved, which may or may not break
// linearizability. Ops are in invocation order.
func randomStream(rnd *rand.Rand, n int, corrupt bool) []*history.Op {
	type ev struct {
		o  *history.Op
		at int64
	}
	var evs []ev
	free := make([]int64, 4) // per process: when it may invoke next
	for i := 0; i < n; i++ {
		p := rnd.Intn(len(free))
		call := free[p] + int64(rnd.Intn(20))
		ret := call + 1 + int64(rnd.Intn(40))
		free[p] = ret + 1
		o := &history.Op{Process: history.Process(p), Key: "s", Type: history.OK, Index: int64(i), Call: call, Return: ret,
			Value: &history.Value{}}
		at := call + rnd.Int63n(ret-call+1)
		if rnd.Intn(3) == 0 {
			o.F, o.Value.Full = history.XRange, true
		} else {
			o.F, o.Value.Value = history.XAdd, fmt.Sprintf("v%d", i)
			if rnd.Intn(4) == 0 {
				o.Type = history.Info
				if rnd.Intn(2) == 0 {
					at = math.MaxInt64 // never took effect
				} else {
					at = call + rnd.Int63n(ret-call+60) // may take effect after the timeout
				}
			}
		}
		evs = append(evs, ev{o, at})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	var list []history.Entry
	for k, e := range evs {
		if e.at == math.MaxInt64 {
			continue
		}
		if e.o.F == history.XAdd {
			id := fmt.Sprintf("%d-0", k+1)
			list = append(list, history.Entry{ID: id, Value: e.o.Value.Value})
			if e.o.Type == history.OK {
				e.o.Value.ID = id
			}
		} else {
			e.o.Value.Entries = append([]history.Entry(nil), list...)
		}
	}
	ops := make([]*history.Op, 0, n)
	var reads []*history.Op
	for _, e := range evs {
		ops = append(ops, e.o)
		if e.o.F == history.XRange {
			reads = append(reads, e.o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Index < ops[j].Index })
	if corrupt && len(reads) > 0 {
		r := reads[rnd.Intn(len(reads))]
		switch es := r.Value.Entries; rnd.Intn(3) {
		case 0: // a stale or early view: shorter or longer by one
			if len(es) > 0 && rnd.Intn(2) == 0 {
				r.Value.Entries = es[:len(es)-1]
			} else if len(list) > len(es) {
				r.Value.Entries = list[:len(es)+1]
			}
		case 1: // moved in time
			d := int64(rnd.Intn(80) - 40)
			r.Call, r.Return = max(0, r.Call+d), max(0, r.Return+d)
			if r.Return <= r.Call {
				r.Return = r.Call + 1
			}
		case 2: // two entries swapped
			if len(es) >= 2 {
				c := append([]history.Entry(nil), es...)
				c[0], c[1] = c[1], c[0]
				r.Value.Entries = c
			}
		}
	}
	return ops
}

// TestChainAgreesWithPorcupine: on random small histories, linearizable or
// not, chain's verdict is porcupine's (the model's) verdict.
func TestChainAgreesWithPorcupine(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	illegal := 0
	for i := 0; i < 3000; i++ {
		ops := observedOnly(mergeIdmpSends(randomStream(rnd, 4+rnd.Intn(14), i%2 == 1)))
		hist := make([]porcupine.Operation, len(ops))
		for k, o := range ops {
			ret := o.Return
			var out any
			if o.Type == history.OK {
				out = linOutput{ID: o.Value.ID, Entries: o.Value.Entries}
			} else {
				ret = math.MaxInt64
			}
			hist[k] = porcupine.Operation{ClientId: int(o.Process), Input: linInput{Append: o.F.IsWrite(), Value: o.Value.Value},
				Call: o.Call, Output: out, Return: ret}
		}
		want := porcupine.CheckOperations(streamModel, hist)
		bad, msg, decided := chain(ops)
		if !decided {
			t.Fatalf("history %d: chain left it undecided", i)
		}
		if got := bad == nil; got != want {
			for _, o := range ops {
				t.Logf("  %s [%d,%d] %+v", o, o.Call, o.Return, *o.Value)
			}
			t.Fatalf("history %d: chain says linearizable=%v (%s), porcupine %v", i, got, msg, want)
		}
		if !want {
			illegal++
		}
	}
	t.Logf("%d of 3000 histories not linearizable", illegal)
	if illegal < 300 {
		t.Fatalf("only %d non-linearizable histories: the corruptions do not test the illegal side", illegal)
	}
}
