package checker

import (
	"time"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Valid is a checker's verdict.
type Valid string

// Verdicts, in increasing order of severity for Merge.
const (
	Ok      Valid = "ok"
	Unknown Valid = "unknown"
	Illegal Valid = "illegal"
)

// Anomaly is one violation, named by the operations (invoke indices) that
// show it.
type Anomaly struct {
	Kind string  `json:"kind"`
	Key  string  `json:"key,omitempty"`
	Msg  string  `json:"msg"`
	Ops  []int64 `json:"ops"`
}

// Result is one checker's verdict on one history.
type Result struct {
	Name      string    `json:"name"`
	Valid     Valid     `json:"valid"`
	Anomalies []Anomaly `json:"anomalies,omitempty"`
	// Notes explain an Unknown verdict and give counts of what was checked.
	Notes []string `json:"notes,omitempty"`
	// Files are artifacts to write beside the report, by file name (the
	// porcupine visualization of a non-linearizable key).
	Files map[string][]byte `json:"-"`
}

// Options describe the workload the history came from.
type Options struct {
	// Trims: the workload trims streams (XADD MAXLEN/MINID, XTRIM), so an
	// entry missing from the front of a read may have been trimmed rather
	// than lost.
	Trims bool
	// Resends: the client may send a write again when its reply was lost
	// (go-redis's ClusterClient resends a whole pipeline after a retryable
	// error), so one value may be appended more than once, each copy under
	// an ID of its own. A value seen under several IDs, or twice in one read,
	// is then not an anomaly; an ID still holds one value. The
	// linearizability model appends each value once, so linearizable says
	// Unknown.
	Resends bool
	// Groups names consumer groups that exist on every stream (created
	// before its first write). Each is judged on every stream with
	// acknowledged writes, even one where the history holds none of its
	// operations: nothing then shows the group drained, so its eventual
	// delivery is Unknown instead of unchecked.
	Groups []string
	// LinearTimeout bounds porcupine's search per stream (for the streams
	// the chain check leaves undecided, and for the visualization of a
	// non-linearizable one); on expiry the verdict is Unknown, or Illegal
	// without a visualization. Zero means 10s.
	LinearTimeout time.Duration
	// Liveness lists the operations that must succeed in the final window;
	// nil means every client operation that occurs in the history.
	Liveness []history.F
}

// Input is what every checker sees: the history, its operations and the
// options. Build it with NewInput, or with NewInputOps from operations
// paired elsewhere.
type Input struct {
	History history.History
	Ops     []history.Op
	Options Options
	// LastHeal is the time of the last heal no fault follows, -1 if none.
	LastHeal int64
}

// NewInput pairs h's operations once for all checkers. h must be valid.
func NewInput(h history.History, o Options) *Input {
	_, heal := h.Faults()
	return &Input{History: h, Ops: h.Ops(), Options: o, LastHeal: heal}
}

// NewInputOps is NewInput for a caller that records its operations compactly
// and pairs them itself (a benchmark's millions of XADDs): ops in
// invocation order, each as History.Ops would build it, and lastHeal the
// time the final window starts (-1 if none). History is left nil; the
// checkers read only Ops.
func NewInputOps(ops []history.Op, lastHeal int64, o Options) *Input {
	return &Input{Ops: ops, Options: o, LastHeal: lastHeal}
}

// Checker is a named check.
type Checker struct {
	Name  string
	Check func(in *Input) Result
}

// All returns every checker in report order.
func All() []Checker {
	return []Checker{
		{"lost", Lost},
		{"duplicates", Duplicates},
		{"ids", IDs},
		{"prefix", Prefix},
		{"linearizable", Linearizable},
		{"groups", Groups},
		{"liveness", Liveness},
	}
}

// Run runs every checker on h.
func Run(h history.History, o Options) []Result {
	in := NewInput(h, o)
	var rs []Result
	for _, c := range All() {
		rs = append(rs, c.Check(in))
	}
	return rs
}

// Merge is the verdict of a set of results: Illegal if any is, else Unknown
// if any is, else Ok.
func Merge(rs []Result) Valid {
	v := Ok
	for _, r := range rs {
		if r.Valid == Illegal {
			return Illegal
		}
		if r.Valid == Unknown {
			v = Unknown
		}
	}
	return v
}

// verdict builds a result: Illegal when there are anomalies, otherwise
// Unknown when unknown is set, otherwise Ok.
func verdict(name string, as []Anomaly, unknown bool, notes []string) Result {
	r := Result{Name: name, Valid: Ok, Anomalies: as, Notes: notes}
	switch {
	case len(as) > 0:
		r.Valid = Illegal
	case unknown:
		r.Valid = Unknown
	}
	return r
}
