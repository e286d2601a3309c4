package workload

import (
	"bytes"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestFaultyLinkToHealthyRedisPasses runs the workload against one real
// redis-server through the fault proxy: the link stalls (operations time
// out, their commands still reach the server afterwards), is slowed, and
// resets every connection. Redis itself stays linearizable and loses
// nothing, so every checker must still say Ok even though the history is
// full of unknown outcomes: they may not be guessed in either direction.
func TestFaultyLinkToHealthyRedisPasses(t *testing.T) {
	addr := testkit.StartRedis(t)
	p, err := local.NewProxy("127.0.0.1:0", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := NewClient(p.Addr(), 100*time.Millisecond)
	defer c.Close()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	phase := func(w *history.Writer, m local.Mode, delay, d time.Duration) {
		name := "link " + m.String()
		w.Nemesis(history.Start, name)
		p.Set(m, delay)
		time.Sleep(d)
		p.Set(local.Pass, 0)
		w.Nemesis(history.Stop, name)
		time.Sleep(30 * time.Millisecond)
	}
	nemesis := func(w *history.Writer) {
		time.Sleep(30 * time.Millisecond)
		phase(w, local.Stall, 0, 250*time.Millisecond)
		phase(w, local.Delay, 30*time.Millisecond, 200*time.Millisecond)
		phase(w, local.Reset, 0, 100*time.Millisecond)
		phase(w, local.Blackhole, 0, 200*time.Millisecond)
	}
	cfg := Config{Keys: []string{"s0", "s1"}, Clients: 4, Seed: seed, Timeout: 100 * time.Millisecond}
	h := record(t, cfg, 400, func(int) Conn { return Redis{c} }, nemesis)
	count := map[history.Type]int{}
	for _, o := range h.Ops() {
		count[o.Type]++
	}
	rs := checker.Run(h, checker.Options{})
	var out bytes.Buffer
	_ = report.Summary(&out, rs)
	t.Logf("%d events, outcomes %v\n%s", len(h), count, out.String())
	if count[history.Info] == 0 {
		t.Error("the faults produced no unknown outcomes; the test proves nothing")
	}
	if v := checker.Merge(rs); v != checker.Ok {
		t.Fatalf("healthy redis behind a faulty link judged %s", v)
	}
}
