package history

import (
	"fmt"
	"math"
)

// Op is one client operation: its invocation paired with its completion.
type Op struct {
	Process Process
	F       F
	Key     string
	Type    Type   // OK, Fail or Info (Info also when never completed)
	Index   int64  // index of the invoke event; names the op in anomalies
	Done    int64  // index of the completion event, -1 if none
	Call    int64  // invocation time
	Return  int64  // completion time; math.MaxInt64 if never completed
	Value   *Value // the completion's value (input + result), else the invocation's; never nil
	Error   string
}

// Ops pairs the client events of h into operations in invocation order.
// h must be valid (see Validate). Nemesis events are not operations; see
// Faults.
func (h History) Ops() []Op {
	var ops []Op
	open := map[Process]int{} // process → position in ops
	for _, e := range h {
		if e.Process == Nemesis {
			continue
		}
		if e.Type == Invoke {
			v := Value{}
			if e.Value != nil {
				v = *e.Value
			}
			open[e.Process] = len(ops)
			ops = append(ops, Op{Process: e.Process, F: e.F, Key: e.Key, Type: Info, Index: e.Index,
				Done: -1, Call: e.Time, Return: math.MaxInt64, Value: &v})
			continue
		}
		i, ok := open[e.Process]
		if !ok {
			continue
		}
		delete(open, e.Process)
		o := &ops[i]
		o.Type, o.Done, o.Return, o.Error = e.Type, e.Index, e.Time, e.Error
		if e.Value != nil {
			o.Value = merge(o.Value, e.Value)
		}
	}
	return ops
}

// merge returns the completion value with input fields the completion left
// empty taken from the invocation.
func merge(inv, done *Value) *Value {
	v := *done
	fill := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	fill(&v.Value, inv.Value)
	fill(&v.Producer, inv.Producer)
	fill(&v.IID, inv.IID)
	fill(&v.From, inv.From)
	fill(&v.Group, inv.Group)
	fill(&v.Consumer, inv.Consumer)
	v.Full = v.Full || inv.Full
	if v.IDs == nil {
		v.IDs = inv.IDs
	}
	return &v
}

func (o Op) String() string {
	return fmt.Sprintf("#%d p%s %s %s %s", o.Index, o.Process, o.F, o.Key, o.Type)
}

// Fault is a window during which a fault was active.
type Fault struct {
	Fault      string
	Start, End int64 // times; End is the stop/heal time, or the last event's time
	StartIndex int64
}

// Faults returns the fault windows of h in start order, and the time of the
// last heal that no fault follows (-1 if none): operations invoked after it
// form the final window. A window ends at the stop with the same fault, at
// a heal, or at the end of the history.
func (h History) Faults() (faults []Fault, lastHeal int64) {
	lastHeal = -1
	var end int64
	if len(h) > 0 {
		end = h[len(h)-1].Time
	}
	open := map[string]int{}
	closeAll := func(t int64) {
		for name, i := range open {
			faults[i].End = t
			delete(open, name)
		}
	}
	for _, e := range h {
		if e.Process != Nemesis {
			continue
		}
		name := ""
		if e.Value != nil {
			name = e.Value.Fault
		}
		switch e.F {
		case Start:
			lastHeal = -1 // a fault after a heal: no final window yet
			if _, ok := open[name]; ok {
				continue
			}
			open[name] = len(faults)
			faults = append(faults, Fault{Fault: name, Start: e.Time, End: end, StartIndex: e.Index})
		case Stop:
			if i, ok := open[name]; ok {
				faults[i].End = e.Time
				delete(open, name)
			}
		case Heal:
			closeAll(e.Time)
			lastHeal = e.Time
		}
	}
	return faults, lastHeal
}
