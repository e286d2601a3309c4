package resp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/admin"
)

func execAt(e *engine.Engine, now int64, args ...string) engine.Reply {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	return e.Exec(now, argv)
}

func scrapeText(be Backend, o StreamMetrics) string {
	sc := admin.NewScrape()
	CollectStreams(be, o, sc)
	var b bytes.Buffer
	sc.WriteTo(&b)
	return b.String()
}

// TestLongestStreamsAcrossScanChunks fills a shard with more streams than
// one SCAN chunk holds and checks the top N are found, longest first, and
// that every group gets its series though its stream is not among them.
func TestLongestStreamsAcrossScanChunks(t *testing.T) {
	be := newFakeBackend(1)
	now := time.Now().UnixMilli()
	e := be.engines[0]
	const streams = 2*scanChunk + 500
	for i := 0; i < streams; i++ {
		n := 1
		switch i {
		case 7:
			n = 9
		case 1700:
			n = 5
		case 2400:
			n = 7
		}
		for j := 0; j < n; j++ {
			execAt(e, now, "XADD", fmt.Sprintf("s%d", i), "*", "f", "v")
		}
	}
	execAt(e, now, "SET", "notastream", "x")
	execAt(e, now, "XGROUP", "CREATE", "s7", "g", "0")
	execAt(e, now, "XREADGROUP", "GROUP", "g", "c", "COUNT", "4", "STREAMS", "s7", ">")
	execAt(e, now, "XGROUP", "CREATE", "s2499", "h", "0")
	lens, rows := scanShard(be, 0, true)
	if len(lens) != streams || len(rows) != 2 {
		t.Fatalf("scanned %d streams and %d groups, want %d and 2", len(lens), len(rows), streams)
	}
	got := longest(lens, 3)
	want := []streamLen{{"s7", 9}, {"s2400", 7}, {"s1700", 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("longest = %v, want %v", got, want)
	}
	out := scrapeText(be, StreamMetrics{TopStreams: 3, MaxGroups: 1000})
	wantLines(t, out,
		`raftstream_stream_length{shard="0",stream="s2400"} 7`,
		`raftstream_stream_group_pending{shard="0",stream="s7",group="g"} 4`,
		`raftstream_stream_group_lag{shard="0",stream="s7",group="g"} 5`,
		`raftstream_stream_group_pending{shard="0",stream="s2499",group="h"} 0`,
		`raftstream_stream_group_lag{shard="0",stream="s2499",group="h"} 1`,
		`raftstream_stream_group_oldest_pending_seconds{shard="0",stream="s2499",group="h"} 0`,
		`raftstream_metrics_groups 2`,
		`raftstream_metrics_groups_dropped 0`,
	)
	if strings.Contains(out, `stream="s2499"} 1`) {
		t.Errorf("s2499 got a length series though it is not among the 3 longest")
	}
}

// TestGroupSeriesCap gives 5 groups different backlogs and a cap of 2:
// the two largest backlogs get series, the dropped gauge says 3, and the
// oldest pending entry's age is measured against the clock at scrape.
func TestGroupSeriesCap(t *testing.T) {
	be := newFakeBackend(2)
	e := be.engines[1]
	now := time.Now().UnixMilli()
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("%d-1", i+1)
		execAt(e, now-60_000, "XADD", "jobs", ids[i], "n", "1")
	}
	// Group gK reads all 10 entries 60 s ago and acknowledges K: backlog
	// (lag + pending) 10-K.
	for k := 0; k < 5; k++ {
		g := fmt.Sprintf("g%d", k)
		execAt(e, now-60_000, "XGROUP", "CREATE", "jobs", g, "0")
		execAt(e, now-60_000, "XREADGROUP", "GROUP", g, "c", "STREAMS", "jobs", ">")
		if k > 0 {
			execAt(e, now, append([]string{"XACK", "jobs", g}, ids[:k]...)...)
		}
	}
	out := scrapeText(be, StreamMetrics{MaxGroups: 2})
	var series []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "raftstream_stream_group_") {
			series = append(series, l)
		}
	}
	if len(series) != 6 {
		t.Errorf("%d group series, want 6 (2 groups × 3):\n%s", len(series), strings.Join(series, "\n"))
	}
	wantLines(t, out,
		`raftstream_stream_group_pending{shard="1",stream="jobs",group="g0"} 10`,
		`raftstream_stream_group_lag{shard="1",stream="jobs",group="g0"} 0`,
		`raftstream_stream_group_pending{shard="1",stream="jobs",group="g1"} 9`,
		`raftstream_metrics_groups 5`,
		`raftstream_metrics_groups_dropped 3`,
	)
	if age := seriesValue(t, out, `raftstream_stream_group_oldest_pending_seconds{shard="1",stream="jobs",group="g1"}`); age < 60 || age > 70 {
		t.Errorf("oldest pending age %v s, want 60 s (delivered 60 s before the scrape)", age)
	}
	if out := scrapeText(be, StreamMetrics{}); out != "" {
		t.Errorf("MaxGroups 0 and TopStreams 0 wrote series:\n%s", out)
	}
}

// TestOldestPendingAcrossReads gives one group a PEL larger than a Read's
// budget whose earliest deliveries sit past the first Read's share (the
// first entries were claimed, so delivered again, later): the scan goes on
// in later Reads and finds them.
func TestOldestPendingAcrossReads(t *testing.T) {
	be := newFakeBackend(1)
	e := be.engines[0]
	start := time.Now()
	now := start.UnixMilli()
	const n = pelChunk + pelChunk/2
	for i := 1; i <= n; i++ {
		execAt(e, now-30_000, "XADD", "big", fmt.Sprintf("%d-1", i), "f", "v")
	}
	execAt(e, now-30_000, "XGROUP", "CREATE", "big", "g", "0")
	execAt(e, now-30_000, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "big", ">")
	// Deliver the first pelChunk+100 again 1 s ago: the entries delivered
	// 30 s ago all come after the first Read's budget.
	execAt(e, now-1000, "XAUTOCLAIM", "big", "g", "c2", "0", "0", "COUNT", fmt.Sprint(pelChunk+100))
	reads0 := be.reads.Load()
	out := scrapeText(be, StreamMetrics{MaxGroups: 10})
	if reads := be.reads.Load() - reads0; reads < 2 {
		t.Errorf("the scrape used %d Reads, want the PEL scanned over several", reads)
	}
	if age := seriesValue(t, out, `raftstream_stream_group_oldest_pending_seconds{shard="0",stream="big",group="g"}`); age < 30 || age > 31+time.Since(start).Seconds() {
		t.Errorf("oldest pending age %v s, want 30 s (plus the %v the test took)", age, time.Since(start))
	}
}

// wantLines fails the test for each line missing from a scrape.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("missing %q in\n%s", l, out)
		}
	}
}

// seriesValue is the value of the series named (with labels) in a scrape.
func seriesValue(t *testing.T, out, series string) float64 {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in\n%s", series, out)
	return 0
}
