package workload

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/report"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// record runs setup, the random phase (with nemesis running beside it), a
// heal and the final phase against the target, and returns the history.
func record(t *testing.T, cfg Config, ops int, target func(int) Conn, nemesis func(w *history.Writer)) history.History {
	t.Helper()
	return recordWith(t, cfg, ops, target, nemesis, nil)
}

// recordWith is record that hands the workload to ready before it starts.
func recordWith(t *testing.T, cfg Config, ops int, target func(int) Conn, nemesis func(w *history.Writer), ready func(*Workload)) history.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	wl := New(cfg, target, w)
	if ready != nil {
		ready(wl)
	}
	if err := wl.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if nemesis != nil {
			nemesis(w)
		}
	}()
	wl.Run(ctx, ops)
	<-done
	w.Nemesis(history.Heal, "")
	wl.Final(ctx)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHealthyRedisPasses records a concurrent history against one real
// redis-server, which is linearizable and loses nothing: every checker must
// say Ok, and every operation kind must have succeeded.
func TestHealthyRedisPasses(t *testing.T) {
	addr := testkit.StartRedis(t)
	c := NewClient(addr, 2*time.Second)
	defer c.Close()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	cfg := Config{Keys: []string{"s0", "s1"}, Clients: 5, Seed: seed}
	h := record(t, cfg, 200, func(int) Conn { return Redis{c} }, nil)
	ok := map[history.F]int{}
	for _, o := range h.Ops() {
		if o.Type == history.OK {
			ok[o.F]++
		}
	}
	for _, f := range []history.F{history.XAdd, history.XRange, history.XRead, history.XReadGroup,
		history.XAck, history.XAutoClaim, history.XPending} {
		if ok[f] == 0 {
			t.Errorf("no ok %s in the history", f)
		}
	}
	rs := checker.Run(h, checker.Options{})
	var out bytes.Buffer
	_ = report.Summary(&out, rs)
	t.Logf("%d events, ok ops %v\n%s", len(h), ok, out.String())
	if v := checker.Merge(rs); v != checker.Ok {
		t.Fatalf("healthy redis judged %s", v)
	}
}
