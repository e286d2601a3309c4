package history

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Type is an event's place in an operation's life: invoke, then ok, fail or
// info.
type Type string

// Event types.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info" // unknown outcome
)

// F names an operation.
type F string

// Client operations.
const (
	XAdd       F = "xadd"
	XAddIdmp   F = "xadd-idmp"
	XRange     F = "xrange"
	XRead      F = "xread"
	XReadGroup F = "xreadgroup"
	XAck       F = "xack"
	XAutoClaim F = "xautoclaim"
	XPending   F = "xpending"
)

// Nemesis operations.
const (
	Start F = "start" // a fault begins; Value.Fault names it
	Stop  F = "stop"  // the fault with the same Value.Fault ends
	Heal  F = "heal"  // all faults are removed; the final window begins
)

// IsWrite reports whether f appends to a stream.
func (f F) IsWrite() bool { return f == XAdd || f == XAddIdmp }

// Process identifies a client; Nemesis is the fault injector.
type Process int

// Nemesis is the process of fault events; it is written as "nemesis".
const Nemesis Process = -1

// MarshalJSON writes a client as its number and the nemesis as "nemesis".
func (p Process) MarshalJSON() ([]byte, error) {
	if p == Nemesis {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// UnmarshalJSON accepts a non-negative number or "nemesis".
func (p *Process) UnmarshalJSON(b []byte) error {
	if string(b) == `"nemesis"` {
		*p = Nemesis
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return fmt.Errorf("process: want a non-negative integer or \"nemesis\", got %s", b)
	}
	*p = Process(n)
	return nil
}

func (p Process) String() string {
	if p == Nemesis {
		return "nemesis"
	}
	return strconv.Itoa(int(p))
}

// Event is one line of a history.
type Event struct {
	Index   int64   `json:"index"`
	Process Process `json:"process"`
	Type    Type    `json:"type"`
	F       F       `json:"f"`
	Key     string  `json:"key,omitempty"`
	Value   *Value  `json:"value,omitempty"`
	Time    int64   `json:"time"` // ns since the history began
	Error   string  `json:"error,omitempty"`
}

// Value is the op-specific payload; which fields are set depends on F (see
// the package documentation).
type Value struct {
	Value    string    `json:"value,omitempty"`
	ID       string    `json:"id,omitempty"`
	Producer string    `json:"producer,omitempty"`
	IID      string    `json:"iid,omitempty"`
	Full     bool      `json:"full,omitempty"`
	From     string    `json:"from,omitempty"`
	Group    string    `json:"group,omitempty"`
	Consumer string    `json:"consumer,omitempty"`
	Entries  []Entry   `json:"entries,omitempty"`
	IDs      []string  `json:"ids,omitempty"`
	Count    int       `json:"count,omitempty"`
	Pending  []Pending `json:"pending,omitempty"`
	Fault    string    `json:"fault,omitempty"`
}

// Entry is a stream entry as seen by a read: its ID and the unique value of
// its single field.
type Entry struct {
	ID    string
	Value string
}

// MarshalJSON writes the pair ["id","value"].
func (e Entry) MarshalJSON() ([]byte, error) { return json.Marshal([2]string{e.ID, e.Value}) }

// UnmarshalJSON reads the pair ["id","value"].
func (e *Entry) UnmarshalJSON(b []byte) error {
	var p [2]string
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("entry: want [\"id\",\"value\"]: %w", err)
	}
	e.ID, e.Value = p[0], p[1]
	return nil
}

// Pending is one entry of a group's pending entries list (PEL).
type Pending struct {
	ID         string `json:"id"`
	Consumer   string `json:"consumer"`
	Deliveries int    `json:"deliveries"`
}

// History is a whole history in file order.
type History []Event
