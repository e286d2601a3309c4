package history

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"
)

// Writer appends events to a JSONL history. It is safe for concurrent use by
// any number of client goroutines: each call assigns the next index and the
// time under one lock, so file order, index order and time order agree.
// Output is buffered; Close flushes it. After the first write error every
// call is a no-op and Close returns that error.
type Writer struct {
	mu    sync.Mutex
	bw    *bufio.Writer
	c     io.Closer // nil when the caller owns the underlying writer
	clock func() int64
	next  int64
	err   error
}

// NewWriter writes to w with time measured from now on the monotonic clock.
// Close flushes but does not close w.
func NewWriter(w io.Writer) *Writer {
	start := time.Now()
	return NewWriterClock(w, func() int64 { return int64(time.Since(start)) })
}

// NewWriterClock is NewWriter with a caller-supplied clock returning ns since
// the history began (tests use a fake one). The clock is read under the
// writer's lock and must not go backwards.
func NewWriterClock(w io.Writer, clock func() int64) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 64<<10), clock: clock}
}

// Create writes a new history file at path (truncating it); Close closes it.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := NewWriter(f)
	w.c = f
	return w, nil
}

// Invoke records that process p sends operation f on key with input v and
// returns the event to pass to Complete.
func (w *Writer) Invoke(p Process, f F, key string, v *Value) Event {
	return w.write(Event{Process: p, Type: Invoke, F: f, Key: key, Value: v})
}

// Complete records the outcome of inv: ok when err is nil, otherwise the type
// Classify gives err (fail only when err proves the command was not
// executed, info otherwise). v is the input plus the result.
func (w *Writer) Complete(inv Event, v *Value, err error) Event {
	t := Classify(err)
	return w.CompleteAs(inv, t, v, err)
}

// CompleteAs records the outcome of inv with an explicit type, for clients
// that know more than Classify (e.g. a command never sent is a fail).
func (w *Writer) CompleteAs(inv Event, t Type, v *Value, err error) Event {
	e := Event{Process: inv.Process, Type: t, F: inv.F, Key: inv.Key, Value: v}
	if err != nil {
		e.Error = err.Error()
	}
	return w.write(e)
}

// Nemesis records a fault event (Start, Stop or Heal) with its description.
func (w *Writer) Nemesis(f F, fault string) Event {
	var v *Value
	if fault != "" {
		v = &Value{Fault: fault}
	}
	return w.write(Event{Process: Nemesis, Type: Info, F: f, Value: v})
}

func (w *Writer) write(e Event) Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	e.Index = w.next
	e.Time = w.clock()
	w.next++
	if w.err != nil {
		return e
	}
	b, err := json.Marshal(e)
	if err == nil {
		b = append(b, '\n')
		_, err = w.bw.Write(b)
	}
	w.err = err
	return e
}

// Flush writes buffered events to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err
}

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes and, for a Writer made by Create, closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
		}
		w.c = nil
	}
	return err
}
