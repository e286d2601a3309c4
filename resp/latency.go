package resp

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/raftstream/raftstream/engine"
)

// LATENCY: Redis's latency monitor, per node. With latency-monitor-threshold
// at N > 0 milliseconds, every command that took at least N ms (observe.go
// says what a command's time is) is a sample of the event "command", or
// "fast-command" for commands flagged fast. Each event keeps its latest 160
// samples, one per second (the worst of that second), and its all-time
// worst. 0 turns sampling off; what was recorded stays until LATENCY RESET.
// LATENCY GRAPH and HISTOGRAM are not implemented (INFO latencystats has
// the percentiles).

// latencySamples is how many samples an event keeps (Redis's LATENCY_TS_LEN).
const latencySamples = 160

type latencyMonitor struct {
	threshold atomic.Int64 // ms; 0 = off

	mu     sync.Mutex
	events map[string]*latencySeries
}

// latencySeries is one event's samples: a ring of per-second worsts.
type latencySeries struct {
	next    int // where the next second's sample goes
	max     int64
	samples [latencySamples]latencySample
}

type latencySample struct{ at, ms int64 } // at: unix seconds; 0 = empty

// add records a sample of ms milliseconds of event at unix second now.
func (m *latencyMonitor) add(event string, ms, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	if prev := &ts.samples[(ts.next+latencySamples-1)%latencySamples]; prev.at == now {
		prev.ms = max(prev.ms, ms)
		return
	}
	ts.samples[ts.next] = latencySample{at: now, ms: ms}
	ts.next = (ts.next + 1) % latencySamples
}

// view runs fn with the events, by name in order, under the lock.
func (m *latencyMonitor) view(fn func(names []string, events map[string]*latencySeries)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m.names(), m.events)
}

// names lists the events with samples, sorted.
func (m *latencyMonitor) names() []string {
	out := make([]string, 0, len(m.events))
	for n := range m.events {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// history is an event's samples, oldest first.
func (ts *latencySeries) history() []latencySample {
	var out []latencySample
	for j := range latencySamples {
		if s := ts.samples[(ts.next+j)%latencySamples]; s.at != 0 {
			out = append(out, s)
		}
	}
	return out
}

func cmdLatencyLatest(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	s.lat.view(func(names []string, events map[string]*latencySeries) {
		for _, n := range names {
			ts := events[n]
			last := ts.samples[(ts.next+latencySamples-1)%latencySamples]
			out = append(out, engine.Array{engine.Bulk(n), engine.Integer(last.at), engine.Integer(last.ms), engine.Integer(ts.max)})
		}
	})
	return out
}

func cmdLatencyHistory(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	s.lat.view(func(_ []string, events map[string]*latencySeries) {
		if ts := events[string(argv[2])]; ts != nil {
			for _, smp := range ts.history() {
				out = append(out, engine.Array{engine.Integer(smp.at), engine.Integer(smp.ms)})
			}
		}
	})
	return out
}

// cmdLatencyReset implements LATENCY RESET [event ...]: the number of
// events whose samples were dropped (names compared ignoring case).
func cmdLatencyReset(s *Server, c *client, argv [][]byte) reply {
	n := 0
	s.lat.view(func(names []string, events map[string]*latencySeries) {
		for _, ev := range names {
			drop := len(argv) == 2
			for _, a := range argv[2:] {
				drop = drop || strings.EqualFold(string(a), ev)
			}
			if drop {
				delete(events, ev)
				n++
			}
		}
	})
	return engine.Integer(n)
}

// cmdLatencyDoctor is Redis's report: a line of statistics per event (its
// samples' average and mean deviation, the period they span, the all-time
// worst), then what to look at.
func cmdLatencyDoctor(s *Server, c *client, argv [][]byte) reply {
	m := &s.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		if m.threshold.Load() == 0 {
			return engine.BulkString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
		}
		return engine.BulkString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
	now := nowMs() / 1000
	for i, n := range m.names() {
		ts := m.events[n]
		h := ts.history()
		var sum, oldest int64
		for _, smp := range h {
			sum += smp.ms
			if oldest == 0 || smp.at < oldest {
				oldest = smp.at
			}
		}
		avg := sum / int64(len(h))
		var dev int64
		for _, smp := range h {
			dev += max(avg-smp.ms, smp.ms-avg)
		}
		period := max(now-oldest, 1)
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.\n",
			i+1, n, len(h), avg, dev/int64(len(h)), float64(period)/float64(len(h)), ts.max)
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	b.WriteString("- SLOWLOG GET lists the slowest commands with their arguments; lower slowlog-log-slower-than to see more of them.\n")
	b.WriteString("- A write's time includes its Raft round trip (replication to a quorum, an fsync of the log on each): compare with the shards' commit latency (/metrics raftstream_shard_commit_seconds).\n")
	return engine.BulkString(b.String())
}
