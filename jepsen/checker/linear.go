package checker

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Linearizable checks each stream for linearizability with porcupine. The
// model is an append-only list of (ID, value):
//
//   - append(value) → id: an ok xadd/xadd-idmp; the list grows by (id, value)
//     and id must exceed the last known ID in the list. An info (unknown
//     outcome) append has no output and stays concurrent with everything
//     after its invocation, so porcupine may place it anywhere after that,
//     including after the last read (as if it never happened). Its ID is
//     unknown until a read shows it.
//   - read-all → list: an ok full read (XRANGE - +, XREAD from 0); it must
//     equal the list, value for value, and ID for ID where the list knows the
//     ID; IDs it shows for unknown-outcome appends are learned.
//
// The verdict comes from chain, which decides this model exactly in
// O(n log n): porcupine's search (exponential in the concurrency, and
// holding a whole list per explored state) exhausted its budget and many
// gigabytes on 2-minute soak runs. Porcupine still searches every stream of
// up to porcupineCrossCheck operations (its Illegal overrides chain: a
// disagreement is reported, not trusted away; its running out of budget
// there leaves chain's verdict), draws the visualization of a
// non-linearizable stream, and decides the rare streams chain leaves to it.
//
// Failed operations and reads without a result are left out, and so are
// unknown-outcome appends whose value no full read of the stream shows:
// placing such an append after the last read is always a valid
// linearization point for it (it constrains nothing else: its ID is
// unknown), so dropping it changes no verdict, while keeping it would make
// porcupine try every subset of them before every read. xadd-idmp
// retries of a value already in the list are modeled as no-ops returning the
// first ID. Streams are checked one by one so an Illegal verdict names the
// key; the porcupine visualization of each failing key is returned in
// Result.Files as linear-<key>.html. With Options.Trims the model does not
// apply (trims remove entries); the checker then says Unknown, and so it
// does with Options.Resends (a value may be appended twice).
func Linearizable(in *Input) Result {
	if in.Options.Trims {
		return verdict("linearizable", nil, true, []string{"the append-only model does not apply to a trimmed workload"})
	}
	if in.Options.Resends {
		return verdict("linearizable", nil, true, []string{"the model appends each value once; a client that resends writes may append one twice"})
	}
	timeout := in.Options.LinearTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	keys, m := byKey(in.Ops, func(o *history.Op) bool {
		return (o.F.IsWrite() && o.Type != history.Fail) || (isRead(o) && o.Type == history.OK && o.Value.Full)
	})
	var as []Anomaly
	var notes []string
	unknown := false
	files := map[string][]byte{}
	for _, k := range keys {
		ops := observedOnly(mergeIdmpSends(m[k]))
		hist := make([]porcupine.Operation, len(ops))
		for i, o := range ops {
			ret := o.Return
			if o.Type != history.OK {
				ret = math.MaxInt64
			}
			var out any
			if o.Type == history.OK {
				out = linOutput{ID: o.Value.ID, Entries: o.Value.Entries}
			}
			in := linInput{Append: o.F.IsWrite(), Value: o.Value.Value}
			hist[i] = porcupine.Operation{ClientId: int(o.Process), Input: in, Call: o.Call, Output: out, Return: ret,
				Metadata: o.String()}
		}
		bad, msg, decided := decide(ops)
		if decided && bad == nil && len(ops) > porcupineCrossCheck {
			continue
		}
		// Streams up to porcupineCrossCheck operations get porcupine's
		// exhaustive search even when chain found a linearization: an
		// Illegal there would be a checker bug, reported rather than
		// trusted away.
		res, info := porcupine.CheckOperationsVerbose(streamModel, hist, timeout)
		if decided && bad == nil {
			if res != porcupine.Illegal {
				continue
			}
			decided = false
			notes = append(notes, fmt.Sprintf("stream %q: porcupine found no linearization where chain found one", k))
		}
		if !decided {
			switch res {
			case porcupine.Ok:
				continue
			case porcupine.Unknown:
				unknown = true
				notes = append(notes, fmt.Sprintf("stream %q: search exceeded %v over %d operations", k, timeout, len(ops)))
				continue
			}
			bad = unlinearized(ops, info)
			msg = "first operations outside the longest partial linearization: " + opList(bad)
		}
		name := "linear-" + fileSafe(k) + ".html"
		if res == porcupine.Illegal {
			var buf bytes.Buffer
			if err := porcupine.Visualize(streamModel, info, &buf); err == nil {
				files[name] = buf.Bytes()
			} else {
				notes = append(notes, fmt.Sprintf("stream %q: visualization failed: %v", k, err))
			}
		} else {
			name = "no visualization: the search for one exceeded " + timeout.String()
		}
		as = append(as, Anomaly{Kind: "non-linearizable", Key: k, Ops: idxs(bad...),
			Msg: fmt.Sprintf("stream %q has no linearization (%d operations); %s; see %s", k, len(ops), msg, name)})
	}
	r := verdict("linearizable", as, unknown, notes)
	if len(files) > 0 {
		r.Files = files
	}
	return r
}

// porcupineCrossCheck is the largest stream (in operations) on which
// porcupine's search also runs when chain has found a linearization; the
// search is exponential in the concurrency and holds a list per state, so
// larger streams rely on chain alone.
const porcupineCrossCheck = 800

// decide is chain; a test replaces it to show the cross-check at work.
var decide = chain

// mergeIdmpSends folds the sends of one idempotent message (xadd-idmp ops
// carrying the same value) into one operation. The message took effect
// once, somewhere between the first send's invocation and the first
// acknowledged send's return (or at any later time when no send was
// acknowledged); one operation spanning that window states exactly that,
// and spares porcupine every interleaving of the retries, which otherwise
// exhausts the search on retry-heavy runs. Whether every acknowledged send
// returned the same ID is the ids checker's concern. ops must be in
// invocation order; the ops themselves are not modified.
func mergeIdmpSends(ops []*history.Op) []*history.Op {
	first := map[string]int{} // value → position in out
	out := make([]*history.Op, 0, len(ops))
	for _, o := range ops {
		if o.F != history.XAddIdmp || o.Type == history.Fail {
			out = append(out, o)
			continue
		}
		i, seen := first[o.Value.Value]
		if !seen {
			first[o.Value.Value] = len(out)
			out = append(out, o)
			continue
		}
		m := out[i]
		if o.Type == history.OK && (m.Type != history.OK || o.Return < m.Return) {
			merged := *m // keeps the first send's Call and Index
			merged.Type, merged.Return, merged.Done, merged.Value = o.Type, o.Return, o.Done, o.Value
			out[i] = &merged
		}
	}
	return out
}

// observedOnly drops the non-ok appends whose value no read in ops shows,
// and ends each remaining one at the return of the first read that shows
// its value: an append a completed read observed took effect before that
// read returned, so every linearization places it there anyway. Without
// that bound an unknown-outcome append stays concurrent with everything
// after its invocation, and a run with many of them exhausts the search.
func observedOnly(ops []*history.Op) []*history.Op {
	seenBy := map[string]int64{} // value → earliest return of a read showing it
	for _, o := range ops {
		if isRead(o) {
			for _, e := range o.Value.Entries {
				if t, ok := seenBy[e.Value]; !ok || o.Return < t {
					seenBy[e.Value] = o.Return
				}
			}
		}
	}
	var out []*history.Op
	for _, o := range ops {
		if o.F.IsWrite() && o.Type != history.OK {
			t, seen := seenBy[o.Value.Value]
			if !seen {
				continue
			}
			// A read that returned before the append began is left for the
			// search to reject.
			if t < o.Return && t >= o.Call {
				bounded := *o
				bounded.Return = t
				o = &bounded
			}
		}
		out = append(out, o)
	}
	return out
}

// unlinearized returns, by invocation, up to 5 of ops that the longest
// partial linearization porcupine found could not place.
func unlinearized(ops []*history.Op, info porcupine.LinearizationInfo) []*history.Op {
	in := map[int]bool{}
	for _, part := range info.PartialLinearizations() {
		var longest []int
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
		for _, i := range longest {
			in[i] = true
		}
	}
	var out []*history.Op
	for i, o := range ops {
		if !in[i] {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

func opList(ops []*history.Op) string {
	var s []string
	for _, o := range ops {
		s = append(s, o.String())
	}
	return strings.Join(s, ", ")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

func fileSafe(k string) string { return unsafeName.ReplaceAllString(k, "_") }

type linInput struct {
	Append bool
	Value  string
}

type linOutput struct {
	ID      string
	Entries []history.Entry
}

// linState is an immutable list; Step returns new states.
type linState []history.Entry

var streamModel = porcupine.Model{
	Init: func() any { return linState(nil) },
	Step: func(state, input, output any) (bool, any) {
		s := state.(linState)
		in := input.(linInput)
		if in.Append {
			return stepAppend(s, in.Value, output)
		}
		return stepRead(s, output.(linOutput).Entries)
	},
	Equal: func(a, b any) bool {
		x, y := a.(linState), b.(linState)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	},
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		for _, e := range state.(linState) {
			h.Write([]byte(e.ID))
			h.Write([]byte{0})
			h.Write([]byte(e.Value))
			h.Write([]byte{0})
		}
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		in := input.(linInput)
		if in.Append {
			if output == nil {
				return fmt.Sprintf("append(%s) → ?", in.Value)
			}
			return fmt.Sprintf("append(%s) → %s", in.Value, output.(linOutput).ID)
		}
		return "read → " + describeList(output.(linOutput).Entries)
	},
	DescribeState: func(state any) string { return describeList(state.(linState)) },
}

func stepAppend(s linState, val string, output any) (bool, any) {
	id := ""
	if output != nil {
		id = output.(linOutput).ID
	}
	for _, e := range s {
		if e.Value == val { // an idempotent retry: no new entry
			return id == "" || e.ID == "" || e.ID == id, s
		}
	}
	if id != "" {
		for i := len(s) - 1; i >= 0; i-- {
			if s[i].ID != "" {
				if !idOf(s[i].ID).Less(idOf(id)) {
					return false, s
				}
				break
			}
		}
	}
	n := make(linState, len(s), len(s)+1)
	copy(n, s)
	return true, append(n, history.Entry{ID: id, Value: val})
}

func stepRead(s linState, read []history.Entry) (bool, any) {
	if len(read) != len(s) {
		return false, s
	}
	var n linState
	for i, e := range read {
		if s[i].Value != e.Value || (s[i].ID != "" && idOf(s[i].ID) != idOf(e.ID)) {
			return false, s
		}
		if s[i].ID == "" {
			if n == nil {
				n = append(linState(nil), s...)
			}
			n[i].ID = e.ID
		}
	}
	if n == nil {
		return true, s
	}
	return true, n
}

func describeList(es []history.Entry) string {
	const show = 6
	var b strings.Builder
	b.WriteString("[")
	if len(es) > show {
		fmt.Fprintf(&b, "…%d more, ", len(es)-show)
		es = es[len(es)-show:]
	}
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		id := e.ID
		if id == "" {
			id = "?"
		}
		fmt.Fprintf(&b, "%s=%s", id, e.Value)
	}
	b.WriteString("]")
	return b.String()
}

// chain decides whether ops (one stream's appends and full reads, after
// mergeIdmpSends and observedOnly) have a linearization under streamModel,
// without a search. Reads show the whole list and the list only grows, so:
//
//   - every read is a prefix of the longest one, M; M fixes the order of the
//     appends it shows (each value must come from exactly one append, an
//     acknowledged one under its acknowledged ID, above the last ID the
//     list knew);
//   - acknowledged appends no read shows come after every read, in ID
//     order (each ID above the last);
//   - a read of length L lies between the L-th and the L+1-th append of M.
//
// That is one chain of steps (reads of the same length unordered among
// themselves); a linearization exists iff every step can be given a point
// in its [call, return] not before the points of the steps before it, and
// placing each at the earliest such point finds one when any exists. On
// failure bad names the step that could not be placed and the one that
// pushed it out, msg says why. decided is false when the ops fall outside
// what chain handles (two appends of one value); porcupine decides those.
func chain(ops []*history.Op) (bad []*history.Op, msg string, decided bool) {
	var reads, appends []*history.Op
	writer := map[string]*history.Op{}
	for _, o := range ops {
		if o.F.IsWrite() {
			if writer[o.Value.Value] != nil {
				return nil, "", false
			}
			writer[o.Value.Value] = o
			appends = append(appends, o)
		} else {
			reads = append(reads, o)
		}
	}
	var longest *history.Op
	for _, r := range reads {
		if longest == nil || len(r.Value.Entries) > len(longest.Value.Entries) {
			longest = r
		}
	}
	var m []history.Entry
	if longest != nil {
		m = longest.Value.Entries
	}
	for _, r := range reads {
		for i, e := range r.Value.Entries {
			if e.Value != m[i].Value || idOf(e.ID) != idOf(m[i].ID) {
				return []*history.Op{longest, r}, fmt.Sprintf("%s and %s disagree at position %d (%s=%s, %s=%s)",
					longest, r, i, m[i].ID, m[i].Value, e.ID, e.Value), true
			}
		}
	}
	firstShowing := func(i int) *history.Op {
		for _, r := range reads {
			if len(r.Value.Entries) > i {
				return r
			}
		}
		return longest
	}
	pos := map[string]int{}
	for i, e := range m {
		w := writer[e.Value]
		switch {
		case w == nil:
			return []*history.Op{firstShowing(i)}, fmt.Sprintf("%s shows %s=%s, which no append wrote", firstShowing(i), e.ID, e.Value), true
		case pos[e.Value] > 0:
			return []*history.Op{w, longest}, fmt.Sprintf("%s shows %s twice", longest, e.Value), true
		case w.Type == history.OK && idOf(w.Value.ID) != idOf(e.ID):
			return []*history.Op{w, firstShowing(i)}, fmt.Sprintf("%s returned ID %s, %s shows %s", w, w.Value.ID, firstShowing(i), e.ID), true
		}
		pos[e.Value] = i + 1
	}
	byLen := make([][]*history.Op, len(m)+1)
	for _, r := range reads {
		byLen[len(r.Value.Entries)] = append(byLen[len(r.Value.Entries)], r)
	}
	// An acknowledged append's ID exceeds the last ID the list knows when
	// it takes effect: the entries the reads before it showed, and the
	// acknowledged ones (an unknown-outcome append's ID is learned from
	// the first read showing it).
	known := -1 // the last entry whose ID is known before m[i]'s append
	for i, e := range m {
		if len(byLen[i]) > 0 {
			known = max(known, i-1)
		}
		w := writer[e.Value]
		if w.Type != history.OK {
			continue
		}
		if known >= 0 && !idOf(m[known].ID).Less(idOf(e.ID)) {
			return []*history.Op{w}, fmt.Sprintf("%s returned ID %s, not above %s before it", w, e.ID, m[known].ID), true
		}
		known = i
	}
	var after []*history.Op // acknowledged appends no read shows
	for _, a := range appends {
		if pos[a.Value.Value] == 0 {
			after = append(after, a)
		}
	}
	sort.Slice(after, func(i, j int) bool { return idOf(after[i].Value.ID).Less(idOf(after[j].Value.ID)) })
	last := ""
	if len(m) > 0 {
		last = m[len(m)-1].ID
	}
	for _, a := range after {
		if a.Type != history.OK { // observedOnly keeps only observed unknown appends
			return nil, "", false
		}
		if last != "" && !idOf(last).Less(idOf(a.Value.ID)) {
			return []*history.Op{a, longest}, fmt.Sprintf("%s returned ID %s, not above %s, yet no read shows it", a, a.Value.ID, last), true
		}
		last = a.Value.ID
	}
	// place gives o the earliest point in its window after the point
	// `after` of step prev (nil: o is the first step).
	place := func(o, prev *history.Op, after int64) (int64, bool) {
		ret := o.Return
		if o.Type != history.OK { // an unknown-outcome append: bounded only by the reads, which follow it in the chain
			ret = math.MaxInt64
		}
		t := o.Call // points may tie: an op that returns when another is invoked is concurrent with it
		if prev != nil {
			t = max(after, o.Call)
		}
		if t > ret {
			bad = []*history.Op{prev, o}
			msg = fmt.Sprintf("%s must take effect after %s, which cannot take effect before %.3fs, but it returned at %.3fs",
				o, prev, float64(after)/1e9, float64(ret)/1e9)
			return 0, false
		}
		return t, true
	}
	var cur int64
	var prev *history.Op
	for i := 0; i <= len(m); i++ {
		if i > 0 {
			a := writer[m[i-1].Value]
			t, ok := place(a, prev, cur)
			if !ok {
				return bad, msg, true
			}
			cur, prev = t, a
		}
		groupMax, groupBy := cur, prev
		for _, r := range byLen[i] {
			t, ok := place(r, prev, cur)
			if !ok {
				return bad, msg, true
			}
			if groupBy == prev || t > groupMax {
				groupMax, groupBy = t, r
			}
		}
		cur, prev = groupMax, groupBy
	}
	for _, a := range after {
		t, ok := place(a, prev, cur)
		if !ok {
			return bad, msg, true
		}
		cur, prev = t, a
	}
	return nil, "", true
}
