package engine

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestGroupStatsAgreeWithCommands drives random group traffic (reads,
// claims, acks, deletes, trims, group creation and removal) and checks
// after every step that StreamStats says what XLEN and XINFO GROUPS say,
// and that OldestDelivery, scanned in pieces of every size, finds the
// largest idle time XPENDING reports. The seed is printed.
func TestGroupStatsAgreeWithCommands(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	e := New(DefaultConfig())
	groups := []string{"g1", "g2", "g3"}
	now := int64(1000)
	ops := []func() string{
		func() string { return "XADD s * f v" },
		func() string {
			return fmt.Sprintf("XGROUP CREATE s %s %d-0 MKSTREAM", groups[rng.Intn(3)], rng.Intn(int(now)))
		},
		func() string { return fmt.Sprintf("XGROUP DESTROY s %s", groups[rng.Intn(3)]) },
		func() string {
			return fmt.Sprintf("XREADGROUP GROUP %s c%d COUNT %d STREAMS s >", groups[rng.Intn(3)], rng.Intn(3), 1+rng.Intn(4))
		},
		func() string {
			return fmt.Sprintf("XAUTOCLAIM s %s c9 %d 0 COUNT %d", groups[rng.Intn(3)], rng.Intn(50), 1+rng.Intn(3))
		},
		func() string {
			return fmt.Sprintf("XACK s %s %d-0 %d-1", groups[rng.Intn(3)], rng.Intn(int(now)), rng.Intn(int(now)))
		},
		func() string { return fmt.Sprintf("XDEL s %d-0", rng.Intn(int(now))) },
		func() string { return fmt.Sprintf("XTRIM s MAXLEN %d", 5+rng.Intn(20)) },
	}
	var maxPending int64
	for i := 0; i < 3000; i++ {
		now += int64(rng.Intn(20))
		line := ops[rng.Intn(len(ops))]()
		run(e, now, line)
		checkGroupStats(t, e, now, fmt.Sprintf("step %d %q", i, line))
		if _, st, ok := e.StreamStats([]byte("s"), nil); ok {
			for _, g := range st {
				maxPending = max(maxPending, g.Pending)
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	t.Logf("largest PEL seen: %d entries", maxPending)
	if maxPending < 5 {
		t.Errorf("the traffic never made a PEL of 5 entries")
	}
	if got, _, ok := e.StreamStats([]byte("nokey"), nil); got != 0 || ok {
		t.Errorf("StreamStats of a missing key: %d %v", got, ok)
	}
	if oldest, _, more := e.OldestDelivery([]byte("s"), "nogroup", ID{}, 10); oldest != math.MaxInt64 || more {
		t.Errorf("OldestDelivery of a missing group: %d %v", oldest, more)
	}
}

// checkGroupStats compares the figures with XLEN, XINFO GROUPS and
// XPENDING at now.
func checkGroupStats(t *testing.T, e *Engine, now int64, where string) {
	t.Helper()
	length, stats, ok := e.StreamStats([]byte("s"), nil)
	if !ok {
		if _, exists := e.keys["s"]; exists {
			t.Errorf("%s: StreamStats misses the stream", where)
		}
		return
	}
	if want := run(e, now, "XLEN s"); fmt.Sprint(length) != want {
		t.Errorf("%s: length %d, XLEN %s", where, length, want)
	}
	infos, _ := e.Exec(now, [][]byte{[]byte("XINFO"), []byte("GROUPS"), []byte("s")}).(Array)
	if len(infos) != len(stats) {
		t.Fatalf("%s: %d groups, XINFO GROUPS has %d", where, len(stats), len(infos))
	}
	for i, g := range stats {
		m := infos[i].(Map)
		lag := "nil"
		if g.LagKnown {
			lag = fmt.Sprint(g.Lag)
		}
		got := fmt.Sprintf("name %s pending %d lag %s", g.Name, g.Pending, lag)
		want := fmt.Sprintf("name %s pending %s lag %s", fmtReply(m[1]), fmtReply(m[5]), fmtReply(m[11]))
		if got != want {
			t.Errorf("%s: %s, XINFO GROUPS %s", where, got, want)
		}
		// XPENDING's largest idle is now minus the oldest delivery.
		maxIdle := int64(-1)
		if pend, ok := e.Exec(now, [][]byte{[]byte("XPENDING"), []byte("s"), []byte(g.Name), []byte("-"), []byte("+"), []byte("1000000")}).(Array); ok {
			for _, p := range pend {
				maxIdle = max(maxIdle, int64(p.(Array)[2].(Integer)))
			}
		}
		for _, piece := range []int{1, 2, 3, 1000} {
			oldest, start, calls := int64(math.MaxInt64), ID{}, 0
			for more := true; more; calls++ {
				var o int64
				o, start, more = e.OldestDelivery([]byte("s"), g.Name, start, piece)
				oldest = min(oldest, o)
				if calls > int(g.Pending)+1 {
					t.Fatalf("%s: OldestDelivery in pieces of %d does not end", where, piece)
				}
			}
			idle := int64(-1)
			if oldest != math.MaxInt64 {
				idle = now - oldest
			}
			if idle != maxIdle {
				t.Errorf("%s: group %s pieces of %d: oldest delivery %d ms ago, XPENDING's largest idle %d", where, g.Name, piece, idle, maxIdle)
			}
		}
	}
}
