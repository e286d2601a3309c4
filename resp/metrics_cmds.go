package resp

import (
	"sort"
	"sync/atomic"
	"time"

	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/command"
)

// cmdMetrics counts commands by table name (subcommands as "parent|sub")
// with a latency histogram each. The map is built once from the command
// table and only read afterwards, so observing takes no lock. Names not in
// the table are counted under "unknown", which bounds the series.
type cmdMetrics struct {
	byName map[string]*cmdMetric
}

type cmdMetric struct {
	calls atomic.Uint64
	// once holds the latency histogram, allocated on the first call (most
	// commands are never used).
	once atomic.Pointer[fsm.Histogram]
}

func newCmdMetrics() *cmdMetrics {
	m := &cmdMetrics{byName: map[string]*cmdMetric{"unknown": {}}}
	for _, c := range command.All() {
		m.byName[c.Name] = &cmdMetric{}
	}
	return m
}

// observe records one command named name (a table name) that started at
// start. Safe on a nil receiver (servers built without New).
func (m *cmdMetrics) observe(name string, start time.Time) {
	m.observeN(name, time.Since(start), 1)
}

// observeN records n commands named name that each took d.
func (m *cmdMetrics) observeN(name string, d time.Duration, n int) {
	if m == nil {
		return
	}
	cm, ok := m.byName[name]
	if !ok {
		cm = m.byName["unknown"]
	}
	cm.calls.Add(uint64(n))
	h := cm.once.Load()
	if h == nil {
		h = fsm.NewHistogram(fsm.LatencyBuckets)
		if !cm.once.CompareAndSwap(nil, h) {
			h = cm.once.Load()
		}
	}
	h.ObserveN(d.Seconds(), uint64(n))
}

// collect writes the command series (only commands called at least once).
func (m *cmdMetrics) collect(w MetricWriter) {
	if m == nil {
		return
	}
	names := make([]string, 0, len(m.byName))
	for n, cm := range m.byName {
		if cm.calls.Load() > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		cm := m.byName[n]
		w.Counter("raftstream_commands_total", "Commands processed, by command name.", float64(cm.calls.Load()), "cmd", n)
		if h := cm.once.Load(); h != nil {
			hs := h.Snapshot()
			w.Histogram("raftstream_command_duration_seconds",
				"Time from reading a command to writing its reply (pipelined writes: until the reply is ready).",
				hs.Bounds, hs.Counts, hs.Count, hs.Sum, "cmd", n)
		}
	}
}
