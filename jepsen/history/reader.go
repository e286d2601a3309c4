package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Read parses a JSONL history, skipping blank lines, and validates it.
// Errors name the line.
func Read(r io.Reader) (History, error) {
	var h History
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e Event
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		h = append(h, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history line %d: %w", line+1, err)
	}
	if err := h.Validate(); err != nil {
		return nil, err
	}
	return h, nil
}

// ReadFile reads the history at path.
func ReadFile(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// Write writes h as JSONL (for fixtures and tools; clients use Writer).
func (h History) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range h {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Validate checks the structure of h: indices strictly increasing, times
// non-decreasing, known types and operations, IDs that parse, at most one
// operation outstanding per process, and completions that match their
// invocation's f and key. Nemesis events must be info events.
func (h History) Validate() error {
	open := map[Process]Event{}
	for i, e := range h {
		if i > 0 && e.Index <= h[i-1].Index {
			return fmt.Errorf("event %d: index %d not above %d", i, e.Index, h[i-1].Index)
		}
		if i > 0 && e.Time < h[i-1].Time {
			return fmt.Errorf("event index %d: time %d before %d", e.Index, e.Time, h[i-1].Time)
		}
		if err := e.validateIDs(); err != nil {
			return fmt.Errorf("event index %d: %w", e.Index, err)
		}
		if e.Process == Nemesis {
			if e.Type != Info || (e.F != Start && e.F != Stop && e.F != Heal) {
				return fmt.Errorf("event index %d: nemesis event must be info start/stop/heal, got %s %s", e.Index, e.Type, e.F)
			}
			continue
		}
		if !knownF[e.F] {
			return fmt.Errorf("event index %d: unknown f %q", e.Index, e.F)
		}
		inv, busy := open[e.Process]
		switch e.Type {
		case Invoke:
			if busy {
				return fmt.Errorf("event index %d: process %s invokes while index %d is outstanding", e.Index, e.Process, inv.Index)
			}
			open[e.Process] = e
		case OK, Fail, Info:
			if !busy {
				return fmt.Errorf("event index %d: %s completion without invocation", e.Index, e.Type)
			}
			if inv.F != e.F || inv.Key != e.Key {
				return fmt.Errorf("event index %d: completes %s %q but index %d invoked %s %q", e.Index, e.F, e.Key, inv.Index, inv.F, inv.Key)
			}
			delete(open, e.Process)
		default:
			return fmt.Errorf("event index %d: unknown type %q", e.Index, e.Type)
		}
	}
	return nil
}

var knownF = map[F]bool{XAdd: true, XAddIdmp: true, XRange: true, XRead: true, XReadGroup: true,
	XAck: true, XAutoClaim: true, XPending: true}

func (e Event) validateIDs() error {
	v := e.Value
	if v == nil {
		return nil
	}
	check := func(s string) error {
		if s == "" {
			return nil
		}
		_, err := ParseID(s)
		return err
	}
	if err := check(v.ID); err != nil {
		return err
	}
	for _, x := range v.Entries {
		if err := check(x.ID); err != nil {
			return err
		}
	}
	for _, s := range v.IDs {
		if err := check(s); err != nil {
			return err
		}
	}
	for _, p := range v.Pending {
		if err := check(p.ID); err != nil {
			return err
		}
	}
	return nil
}
