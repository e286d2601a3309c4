package resp

import (
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/command"
)

// cmdMetrics counts commands by table row (subcommands as "parent|sub")
// with a latency histogram each, and error replies by their code. It feeds
// /metrics (counters that only grow) and INFO commandstats, errorstats and
// latencystats (which CONFIG RESETSTAT zeroes: INFO shows what changed since
// a baseline taken then). The rows are laid out once from the command table
// and only read afterwards, so observing a command takes no lock. Requests
// that name no row are counted under "unknown", which bounds the series.
type cmdMetrics struct {
	byID    []cmdMetric // by command.Command.ID
	unknown cmdMetric

	// errs counts error replies by code (errorstats); at most maxErrorCodes
	// codes, as Redis.
	errMu sync.Mutex
	errs  map[string]*atomic.Uint64
	// errTotal counts every error reply (total_error_replies).
	errTotal atomic.Uint64
	errBase  atomic.Uint64
}

// maxErrorCodes bounds the error codes errorstats tracks (Redis's
// ERROR_STATS_NUMBER); the replies of codes past it are still counted in
// total_error_replies.
const maxErrorCodes = 128

type cmdMetric struct {
	// calls counts the commands that ran, rejected those refused before
	// running (rejected_calls: arity, authentication, ACL, maxmemory,
	// CROSSSLOT, MULTI's queueing checks), failed those that ran and
	// answered an error (failed_calls).
	calls, rejected, failed atomic.Uint64
	// hist holds the durations of the calls that were timed (not those
	// inside MULTI/EXEC, timed as a whole, nor blocked reads), allocated on
	// the first one (most commands are never used).
	hist atomic.Pointer[fsm.Histogram]
	// base is what INFO subtracts: the counts at the last CONFIG RESETSTAT.
	base atomic.Pointer[cmdBase]
}

type cmdBase struct {
	calls, rejected, failed uint64
	hist                    fsm.HistSnapshot
}

// cmdBuckets are the bounds, in seconds, of a command's latency histogram:
// 16 per doubling from 0.78µs to 13s, so latencystats' percentiles are
// within 4.5%, and each bound of fsm.LatencyBuckets (the /metrics
// histogram's, folded from these by promIdx) is one of them.
var cmdBuckets, promIdx = func() ([]float64, []int) {
	const per, below = 16, 7
	lb := fsm.LatencyBuckets
	var b []float64
	var idx []int
	for k := -below * per; k <= (len(lb)-1)*per; k++ {
		v := lb[0] * math.Pow(2, float64(k)/per)
		if k >= 0 && k%per == 0 {
			v = lb[k/per]
		}
		b = append(b, v)
		idx = append(idx, max(0, (k+per-1)/per))
	}
	return b, idx
}()

func newCmdMetrics() *cmdMetrics {
	return &cmdMetrics{byID: make([]cmdMetric, len(command.All())), errs: map[string]*atomic.Uint64{}}
}

// row is cmd's counters (unknown's for nil).
func (m *cmdMetrics) row(cmd *command.Command) *cmdMetric {
	if cmd == nil {
		return &m.unknown
	}
	return &m.byID[cmd.ID]
}

// observe records one command that ran (cmd nil: not in the table) and
// started at start. Safe on a nil receiver (servers built without New).
func (m *cmdMetrics) observe(cmd *command.Command, start time.Time) {
	m.observeN(cmd, time.Since(start), 1)
}

// observeN records n commands that ran and each took d; d < 0: not timed.
func (m *cmdMetrics) observeN(cmd *command.Command, d time.Duration, n int) {
	if m == nil {
		return
	}
	cm := m.row(cmd)
	cm.calls.Add(uint64(n))
	if d < 0 {
		return
	}
	h := cm.hist.Load()
	if h == nil {
		h = fsm.NewHistogram(cmdBuckets)
		if !cm.hist.CompareAndSwap(nil, h) {
			h = cm.hist.Load()
		}
	}
	h.ObserveN(d.Seconds(), uint64(n))
}

// replied counts rep against cmd if it is an error: a failed call, or with
// refused a rejected one (which observe does not count as a call).
func (m *cmdMetrics) replied(cmd *command.Command, rep reply, refused bool) {
	e, ok := rep.(*engine.Error)
	if m == nil || !ok {
		return
	}
	if refused {
		m.row(cmd).rejected.Add(1)
	} else {
		m.row(cmd).failed.Add(1)
	}
	m.countError(e.Msg)
}

// countError counts an error reply under its code: the text before the
// first space within its first 32 bytes, else ERR (Redis's rule).
func (m *cmdMetrics) countError(msg string) {
	m.errTotal.Add(1)
	code := "ERR"
	if i := strings.IndexByte(msg[:min(len(msg), 32)], ' '); i >= 0 {
		code = msg[:i]
	}
	m.errMu.Lock()
	n := m.errs[code]
	if n == nil && len(m.errs) < maxErrorCodes {
		n = new(atomic.Uint64)
		m.errs[code] = n
	}
	m.errMu.Unlock()
	if n != nil {
		n.Add(1)
	}
}

// reset makes INFO's command and error statistics start again from zero
// (CONFIG RESETSTAT); /metrics keeps counting.
func (m *cmdMetrics) reset() {
	for i := range m.byID {
		cm := &m.byID[i]
		b := &cmdBase{calls: cm.calls.Load(), rejected: cm.rejected.Load(), failed: cm.failed.Load()}
		if h := cm.hist.Load(); h != nil {
			b.hist = h.Snapshot()
		}
		cm.base.Store(b)
	}
	m.errMu.Lock()
	clear(m.errs)
	m.errMu.Unlock()
	m.errBase.Store(m.errTotal.Load())
}

// cmdStat is one row's statistics since the last CONFIG RESETSTAT.
type cmdStat struct {
	name                    string
	calls, rejected, failed uint64
	hist                    fsm.HistSnapshot // Counts nil when never timed
}

// stats lists the rows used since the last reset, by name.
func (m *cmdMetrics) stats() []cmdStat {
	var out []cmdStat
	for _, cmd := range command.All() {
		cm := &m.byID[cmd.ID]
		st := cmdStat{name: cmd.Name, calls: cm.calls.Load(), rejected: cm.rejected.Load(), failed: cm.failed.Load()}
		if h := cm.hist.Load(); h != nil {
			st.hist = h.Snapshot()
		}
		if b := cm.base.Load(); b != nil {
			st.calls, st.rejected, st.failed = st.calls-b.calls, st.rejected-b.rejected, st.failed-b.failed
			if b.hist.Counts != nil {
				for i := range st.hist.Counts {
					st.hist.Counts[i] -= b.hist.Counts[i]
				}
				st.hist.Count -= b.hist.Count
				st.hist.Sum -= b.hist.Sum
			}
		}
		if st.calls+st.rejected+st.failed > 0 {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// errorStats lists the error codes counted since the last reset, sorted,
// and the total of error replies.
func (m *cmdMetrics) errorStats() (codes []string, counts []uint64, total uint64) {
	m.errMu.Lock()
	for c := range m.errs {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		counts = append(counts, m.errs[c].Load())
	}
	m.errMu.Unlock()
	return codes, counts, m.errTotal.Load() - m.errBase.Load()
}

// percentile is the duration under which fraction p of h's observations
// fall: the upper bound of the bucket holding the observation of that rank
// (the last bound for those above it).
func percentile(h fsm.HistSnapshot, p float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(p*float64(h.Count))), 1)
	var seen uint64
	for i, n := range h.Counts {
		if seen += n; seen >= rank {
			return time.Duration(h.Bounds[i] * float64(time.Second))
		}
	}
	return time.Duration(h.Bounds[len(h.Bounds)-1] * float64(time.Second))
}

// collect writes the command series (only commands called at least once).
func (m *cmdMetrics) collect(w MetricWriter) {
	if m == nil {
		return
	}
	series := func(name string, cm *cmdMetric) {
		n := cm.calls.Load() + cm.rejected.Load()
		if n == 0 {
			return
		}
		w.Counter("raftstream_commands_total", "Commands processed, by command name.", float64(n), "cmd", name)
		if h := cm.hist.Load(); h != nil {
			hs := h.Snapshot()
			counts := make([]uint64, len(fsm.LatencyBuckets))
			for i, c := range hs.Counts {
				counts[promIdx[i]] += c
			}
			w.Histogram("raftstream_command_duration_seconds",
				"Time from reading a command to writing its reply (pipelined writes: until the reply is ready).",
				fsm.LatencyBuckets, counts, hs.Count, hs.Sum, "cmd", name)
		}
	}
	rows := command.All()
	names := make([]string, 0, len(rows)+1)
	byName := make(map[string]*cmdMetric, len(rows)+1)
	for _, cmd := range rows {
		names = append(names, cmd.Name)
		byName[cmd.Name] = &m.byID[cmd.ID]
	}
	names = append(names, "unknown")
	byName["unknown"] = &m.unknown
	sort.Strings(names)
	for _, n := range names {
		series(n, byName[n])
	}
}
