package resp

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/resp/command"

	"github.com/raftstream/raftstream/resp/admin"
)

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
		m.observe(r.cmd, start)
	}
	sc := admin.NewScrape()
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
	xadd := command.Get("xadd")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.observe(xadd, start)
		}
	})
}
