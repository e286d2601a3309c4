package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/engine"
)

// A backup taken under load: 16 writers, one per stream, each applying a
// sequence of operations whose effects are all known (loadOp), so that the
// state a restore brings back can be held to the history: it must be the
// state after some prefix of each stream's operations that holds every one
// acknowledged before the backup began.

// loadOp is one operation of a stream's writer and its effect.
type loadOp struct {
	kind     byte // 'a' XADD, 'r' XREADGROUP, 'k' XACK, 'c' XCLAIM … JUSTID
	id       engine.ID
	seq      int         // XADD: the entry's seq field
	consumer string      // XREADGROUP, XCLAIM
	ids      []engine.ID // XREADGROUP: the entries delivered
	count    uint64      // XCLAIM: RETRYCOUNT
	acked    time.Time   // when the effect was known (the reply, or a read after a failure)
}

// loadModel is a stream's state as its operations make it: entries, the
// group's last-delivered-id and PEL (owner and delivery count).
type loadModel struct {
	entries []loadEntry
	last    engine.ID
	pel     map[engine.ID]loadNack
}

type loadEntry struct {
	id  engine.ID
	seq int
}

type loadNack struct {
	owner string
	count uint64
}

func newLoadModel() *loadModel { return &loadModel{pel: map[engine.ID]loadNack{}} }

func (m *loadModel) apply(op loadOp) {
	switch op.kind {
	case 'a':
		m.entries = append(m.entries, loadEntry{op.id, op.seq})
	case 'r':
		for _, id := range op.ids {
			m.pel[id] = loadNack{op.consumer, 1}
			m.last = id
		}
	case 'k':
		delete(m.pel, op.id)
	case 'c':
		if _, ok := m.pel[op.id]; ok {
			m.pel[op.id] = loadNack{op.consumer, op.count}
		}
	}
}

// oldestPending is the PEL's smallest ID.
func (m *loadModel) oldestPending() (engine.ID, bool) {
	var min engine.ID
	found := false
	for id := range m.pel {
		if !found || id.Less(min) {
			min, found = id, true
		}
	}
	return min, found
}

// equal compares the model with a stream's state read from a server.
func (m *loadModel) equal(s *loadModel) bool {
	if len(m.entries) != len(s.entries) || m.last != s.last || len(m.pel) != len(s.pel) {
		return false
	}
	for i := range m.entries {
		if m.entries[i] != s.entries[i] {
			return false
		}
	}
	for id, n := range m.pel {
		if s.pel[id] != n {
			return false
		}
	}
	return true
}

// streamWriter applies operations to one stream until stop closes.
type streamWriter struct {
	key   string
	c     *redis.ClusterClient
	model *loadModel
	ops   []loadOp
	pad   string
}

// retried runs do until it succeeds: each try is safe to repeat (an
// explicit-ID XADD that already applied fails with ErrXAddIDTooSmall,
// which done accepts), so the effect is known once it returns.
func retried(ctx context.Context, do func() error, done func(error) bool) error {
	for {
		err := do()
		if err == nil || done != nil && done(err) {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *streamWriter) run(ctx context.Context, stop <-chan struct{}) error {
	n := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		var op loadOp
		oldest, pending := w.model.oldestPending()
		switch {
		case i%4 == 3:
			op = loadOp{kind: 'r', consumer: fmt.Sprintf("c%d", i%3)}
			if err := w.readGroup(ctx, &op); err != nil {
				return err
			}
		case i%8 == 5 && pending:
			op = loadOp{kind: 'k', id: oldest}
			if err := retried(ctx, func() error { return w.c.XAck(ctx, w.key, "g", oldest.String()).Err() }, nil); err != nil {
				return err
			}
		case i%16 == 9 && pending:
			op = loadOp{kind: 'c', id: oldest, consumer: "rescuer", count: w.model.pel[oldest].count + 1}
			if err := retried(ctx, func() error {
				return w.c.Do(ctx, "XCLAIM", w.key, "g", op.consumer, 0, oldest.String(), "RETRYCOUNT", op.count, "JUSTID").Err()
			}, nil); err != nil {
				return err
			}
		default:
			n++
			op = loadOp{kind: 'a', id: engine.ID{Ms: uint64(n), Seq: 1}, seq: n}
			if err := retried(ctx, func() error {
				return w.c.Do(ctx, "XADD", w.key, op.id.String(), "seq", n, "pad", w.pad).Err()
			}, func(err error) bool { return strings.Contains(err.Error(), engine.ErrXAddIDTooSmall.Msg) }); err != nil {
				return err
			}
		}
		op.acked = time.Now()
		w.model.apply(op)
		w.ops = append(w.ops, op)
	}
}

// readGroup delivers up to 2 entries to op.consumer. When the reply is
// lost (an error), the group's last-delivered-id, read linearizably, says
// what was delivered: the model's entries up to it.
func (w *streamWriter) readGroup(ctx context.Context, op *loadOp) error {
	res, err := w.c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: op.consumer,
		Streams: []string{w.key, ">"}, Count: 2, Block: -1}).Result()
	if err == nil || errors.Is(err, redis.Nil) {
		for _, s := range res {
			for _, m := range s.Messages {
				id, perr := engine.ParseID([]byte(m.ID), 0)
				if perr != nil {
					return perr
				}
				op.ids = append(op.ids, id)
			}
		}
		return nil
	}
	var last engine.ID
	if err := retried(ctx, func() error {
		gs, err := w.c.XInfoGroups(ctx, w.key).Result()
		if err == nil {
			last, err = engine.ParseID([]byte(gs[0].LastDeliveredID), 0)
		}
		return err
	}, nil); err != nil {
		return err
	}
	for _, e := range w.model.entries {
		if w.model.last.Less(e.id) && !last.Less(e.id) {
			op.ids = append(op.ids, e.id)
		}
	}
	return nil
}

// readLoadState reads a stream's entries and group g from c.
func readLoadState(t testing.TB, ctx context.Context, c redis.UniversalClient, key string) *loadModel {
	t.Helper()
	s := newLoadModel()
	start := "-"
	for {
		es, err := c.XRangeN(ctx, key, start, "+", 1000).Result()
		if err != nil {
			t.Fatalf("XRANGE %s: %v", key, err)
		}
		for _, e := range es {
			id, _ := engine.ParseID([]byte(e.ID), 0)
			seq, _ := strconv.Atoi(fmt.Sprint(e.Values["seq"]))
			s.entries = append(s.entries, loadEntry{id, seq})
		}
		if len(es) < 1000 {
			break
		}
		start = "(" + es[len(es)-1].ID
	}
	gs, err := c.XInfoGroups(ctx, key).Result()
	if err != nil || len(gs) != 1 {
		t.Fatalf("XINFO GROUPS %s: %v %v", key, gs, err)
	}
	s.last, _ = engine.ParseID([]byte(gs[0].LastDeliveredID), 0)
	ps, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: "g", Start: "-", End: "+", Count: 1 << 20}).Result()
	if err != nil {
		t.Fatalf("XPENDING %s: %v", key, err)
	}
	for _, p := range ps {
		id, _ := engine.ParseID([]byte(p.ID), 0)
		s.pel[id] = loadNack{p.Consumer, uint64(p.RetryCount)}
	}
	return s
}

// TestBackupUnderLoadRestoresIntoANewCluster backs up a 3-node cluster of
// 8 shards while 16 writers append to 16 streams, deliver their entries to
// a consumer group, acknowledge and claim them, and restores the backup
// into a new 3-node cluster of 3 shards. For every stream, the restored
// entries, last-delivered-id and PEL (owners, delivery counts) are the
// state after a prefix of its writer's operations that holds every one
// acknowledged before the backup began: each acknowledged entry exactly
// once, nothing that was not written. restore --verify finds the target
// equal to the backup (delivery times included), and the bulk streams
// written before the load are whole.
func TestBackupUnderLoadRestoresIntoANewCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("two 3-node clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	src := startCluster(t, 3, 8)
	sc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrsOf(src), Protocol: 2, DisableIdentity: true,
		MaxRedirects: 16, MaxRetries: -1, ReadTimeout: 10 * time.Second, PoolSize: 32})
	t.Cleanup(func() { sc.Close() })

	// Bulk streams, written before the load: about 20 MB.
	const bulkStreams, bulkPer = 16, 10000
	pad := strings.Repeat("p", 80)
	for i := range bulkStreams {
		key := fmt.Sprintf("bulk:%02d", i)
		for j := 0; j < bulkPer; j += 1000 {
			p := sc.Pipeline()
			for k := j; k < j+1000; k++ {
				p.Do(ctx, "XADD", key, fmt.Sprintf("%d-1", k+1), "n", k, "pad", pad)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatalf("seed %s: %v", key, err)
			}
		}
	}
	writers := make([]*streamWriter, 16)
	for i := range writers {
		writers[i] = &streamWriter{key: fmt.Sprintf("load:%02d", i), c: sc, model: newLoadModel(), pad: pad}
		if err := retried(ctx, func() error {
			return sc.XGroupCreateMkStream(ctx, writers[i].key, "g", "$").Err()
		}, func(err error) bool { return strings.Contains(err.Error(), "BUSYGROUP") }); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, len(writers))
	for i, w := range writers {
		wg.Go(func() { errs[i] = w.run(ctx, stop) })
	}
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()
	time.Sleep(time.Second) // the load is under way

	file := t.TempDir() + "/cluster.rsbk"
	began := time.Now()
	out := mustRun(t, backupCmd, "--addr", src[1].Addr, "--out", file)
	ended := time.Now()
	time.Sleep(300 * time.Millisecond)
	stopLoad()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %s: %v", writers[i].key, err)
		}
	}
	t.Logf("%s", strings.TrimSpace(out))

	dst := startCluster(t, 3, 3)
	restoreStart := time.Now()
	out = mustRun(t, restoreCmd, "--in", file, "--to", dst[2].Addr, "--verify")
	restoreTook := time.Since(restoreStart)
	t.Logf("%s", out)
	if n := len(regexp.MustCompile(`verify: \d+ streams compared \(XINFO STREAM FULL and every entry\): 0 differences`).FindAllString(out, -1)); n != 8 {
		t.Errorf("restore --verify: %d of 8 shards found equal:\n%s", n, out)
	}
	dc := clusterClient(t, addrsOf(dst)...)

	// Every stream is the state after a prefix of its operations holding
	// every one acknowledged before the backup began.
	var before, during, after, included int
	for _, w := range writers {
		got := readLoadState(t, ctx, dc, w.key)
		acked := 0
		for acked < len(w.ops) && w.ops[acked].acked.Before(began) {
			acked++
		}
		m, match := newLoadModel(), -1
		for k := 0; k <= len(w.ops); k++ {
			if k > 0 {
				m.apply(w.ops[k-1])
			}
			if k >= acked && m.equal(got) {
				match = k
				break
			}
		}
		seen := map[int]bool{}
		for _, e := range got.entries {
			if seen[e.seq] {
				t.Errorf("%s: seq %d restored twice", w.key, e.seq)
			}
			seen[e.seq] = true
		}
		if match < 0 {
			t.Errorf("%s: the restored state (%d entries, last-delivered %s, %d pending) is no prefix of the %d operations holding the %d acknowledged before the backup",
				w.key, len(got.entries), got.last, len(got.pel), len(w.ops), acked)
			continue
		}
		for _, op := range w.ops {
			switch {
			case op.acked.Before(began):
				before++
			case op.acked.Before(ended):
				during++
			default:
				after++
			}
		}
		included += match - acked
	}
	t.Logf("operations: %d acknowledged before the backup, %d during it, %d after; %d of those after the start are in the restored state",
		before, during, after, included)
	if during == 0 {
		t.Errorf("no operation was acknowledged while the backup ran: the test did not test a backup under load")
	}
	for i := range bulkStreams {
		key := fmt.Sprintf("bulk:%02d", i)
		if n := dc.XLen(ctx, key).Val(); n != bulkPer {
			t.Errorf("%s: XLEN %d after the restore, want %d", key, n, bulkPer)
		}
	}
	t.Logf("restore took %v", restoreTook.Round(time.Millisecond))
}
