package resp

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/resp/admin"
)

// TestCmdMetricsNames counts table names, subcommands as parent|sub, and
// unknown names under "unknown" (the series stay bounded).
func TestCmdMetricsNames(t *testing.T) {
	m := newCmdMetrics()
	start := time.Now()
	m.observeArgv([][]byte{[]byte("XADD"), []byte("s"), []byte("*"), []byte("f"), []byte("v")}, start)
	m.observeArgv([][]byte{[]byte("xgroup"), []byte("CREATE"), []byte("s"), []byte("g"), []byte("$")}, start)
	m.observeArgv([][]byte{[]byte("NOSUCH")}, start)
	m.observeArgv([][]byte{[]byte("nosuch2")}, start)
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
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.observe("xadd", start)
		}
	})
}
