package resp

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/resp/command"
)

// TestScrapeTextFormat checks the exposition: HELP/TYPE once per family,
// families sorted, label values escaped, histogram buckets cumulative with
// +Inf equal to the count.
func TestScrapeTextFormat(t *testing.T) {
	sc := NewScrape()
	sc.Add("b_total", "B things.", Counter, 3, Label{"k", `a"b\c` + "\n"})
	sc.Add("b_total", "B things.", Counter, 4, Label{"k", "x"})
	sc.Add("a_gauge", "A gauge.", Gauge, 1.5)
	sc.Histogram("c_seconds", "C.", HistogramValue{Bounds: []float64{0.1, 1}, Counts: []uint64{2, 3}, Count: 7, Sum: 9.5}, Label{"s", "0"})
	var b bytes.Buffer
	if _, err := sc.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP a_gauge A gauge.
# TYPE a_gauge gauge
a_gauge 1.5
# HELP b_total B things.
# TYPE b_total counter
b_total{k="a\"b\\c\n"} 3
b_total{k="x"} 4
# HELP c_seconds C.
# TYPE c_seconds histogram
c_seconds_bucket{s="0",le="0.1"} 2
c_seconds_bucket{s="0",le="1"} 5
c_seconds_bucket{s="0",le="+Inf"} 7
c_seconds_sum{s="0"} 9.5
c_seconds_count{s="0"} 7
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestCmdMetricsNames counts table names, subcommands as parent|sub, and
// unknown names under "unknown" (the series stay bounded).
func TestCmdMetricsNames(t *testing.T) {
	m := newCmdMetrics()
	start := time.Now()
	for _, line := range []string{"XADD s * f v", "xgroup CREATE s g $", "NOSUCH", "nosuch2"} {
		var r request
		for _, f := range strings.Fields(line) {
			r.argv = append(r.argv, []byte(f))
		}
		r.cmd, r.err = command.Lookup(r.argv)
		m.observe(r.name(), start)
	}
	sc := NewScrape()
	m.collect(sc)
	var b bytes.Buffer
	sc.WriteTo(&b)
	for _, s := range []string{`raftstream_commands_total{cmd="xadd"} 1`, `raftstream_commands_total{cmd="xgroup|create"} 1`,
		`raftstream_commands_total{cmd="unknown"} 2`, `raftstream_command_duration_seconds_count{cmd="xadd"} 1`} {
		if !strings.Contains(b.String(), s+"\n") {
			t.Errorf("missing %q in:\n%s", s, b.String())
		}
	}
	if strings.Contains(b.String(), "nosuch") {
		t.Errorf("unknown command name leaked into a label:\n%s", b.String())
	}
}

// BenchmarkCmdMetricsObserve is the per-command cost on the hot path.
func BenchmarkCmdMetricsObserve(b *testing.B) {
	m := newCmdMetrics()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.observe("xadd", start)
		}
	})
}
