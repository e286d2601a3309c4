package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestStatsHarvestTimeline: each harvest turns what the shards recorded
// since the previous one into a per-second point, and the totals add up.
func TestStatsHarvestTimeline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := NewStats(2, t0)
	prod := st.Shard(-1)
	billing, analytics := st.Shard(0), st.Shard(1)

	prod.record(opXAdd, 100, 2*time.Millisecond)
	prod.fail(opXAdd, 3)
	billing.delivered(80, 5, []int64{int64(10 * time.Millisecond)})
	analytics.delivered(40, 0, nil)
	p1 := st.Harvest(t0.Add(time.Second))

	prod.record(opXAdd, 50, 4*time.Millisecond)
	p2 := st.Harvest(t0.Add(3 * time.Second)) // a 2-second interval

	if p1.T != 1 || p1.ProducedPerSec != 100 || p1.Errors != 3 || p1.ConsumedPerSec[0] != 80 || p1.ConsumedPerSec[1] != 40 {
		t.Fatalf("first point: %+v", p1)
	}
	if math.Abs(p1.XAddP99us-2000) > 2000.0/histSub || math.Abs(p1.E2EP99us-10000) > 10000.0/histSub {
		t.Fatalf("first point latencies: %+v", p1)
	}
	if p2.T != 3 || p2.Secs != 2 || p2.ProducedPerSec != 25 || p2.ConsumedPerSec[0] != 0 || p2.Errors != 0 || p2.E2EP99us != 0 {
		t.Fatalf("second point: %+v", p2)
	}
	if math.Abs(p2.XAddP50us-4000) > 4000.0/histSub {
		t.Fatalf("second point p50: %+v", p2)
	}
	if len(st.Timeline) != 2 || st.total.ops[opXAdd] != 150 || st.total.errs[opXAdd] != 3 ||
		st.total.msgs[0] != 80 || st.total.foreign[0] != 5 || st.total.lat[opXAdd].Count() != 150 {
		t.Fatalf("totals: ops %d errs %d msgs %v foreign %v", st.total.ops[opXAdd], st.total.errs[opXAdd], st.total.msgs, st.total.foreign)
	}

	cfg := DefaultConfig()
	line := progressLine(&cfg, p1, false)
	for _, want := range []string{"produce]", "xadd      100/s", "billing       80/s", "analytics       40/s", "e2e p99 10.", "errors 3"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
}
