package main

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// durabilityState records what clients were told: only acknowledged
// operations must survive a crash.
type durabilityState struct {
	mu        sync.Mutex
	added     map[string]bool // XADD acknowledged with this ID
	delivered map[string]bool // returned by XREADGROUP >
	acked     map[string]bool // XACK acknowledged
	ackTried  map[string]bool // XACK sent (outcome maybe unknown)
	maxDeliv  string
}

func newDurabilityState() *durabilityState {
	return &durabilityState{added: map[string]bool{}, delivered: map[string]bool{}, acked: map[string]bool{}, ackTried: map[string]bool{}}
}

func idLess(a, b string) bool {
	var am, as, bm, bs uint64
	fmt.Sscanf(a, "%d-%d", &am, &as)
	fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return am < bm || (am == bm && as < bs)
}

// TestDurabilitySIGKILL writes entries and consumes them through a group,
// SIGKILLs the node at random points, restarts it, and checks that every
// acknowledged XADD, XREADGROUP delivery and XACK is intact: once recovering
// from the log only, once with frequent snapshots (kills then also land
// during snapshots) so recovery goes through snapshot + log.
func TestDurabilitySIGKILL(t *testing.T) {
	modes := []struct {
		name string
		args []string
	}{
		{"log-only", []string{"--snapshot-interval", "1h"}},
		{"snapshot+log", []string{"--snapshot-interval", "20ms", "--snapshot-threshold", "8", "--trailing-logs", "4"}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			seed := time.Now().UnixNano()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewSource(seed))
			n := startNode(t, "", mode.args...)
			st := newDurabilityState()
			setup := redis.NewClient(&redis.Options{Addr: n.Addr})
			if err := setup.XGroupCreateMkStream(context.Background(), "d", "g", "$").Err(); err != nil {
				t.Fatal(err)
			}
			setup.Close()
			for round := 0; round < 3; round++ {
				runLoad(n.Addr, st, time.Duration(100+rng.Intn(400))*time.Millisecond, n.Kill)
				n.Start()
				verifyDurability(t, n.Addr, st, round)
			}
			snaps, _ := filepath.Glob(filepath.Join(n.Dir, "shards", "*", "snapshots", "*", "meta.json"))
			if wantSnap := mode.name == "snapshot+log"; wantSnap && len(snaps) == 0 {
				t.Fatalf("no snapshot was taken: recovery never went through snapshot + log")
			}
		})
	}
}

// runLoad runs writers and a consumer until after d, when crash is called
// (while they are still running), then waits for them to stop.
func runLoad(addr string, st *durabilityState, d time.Duration, crash func()) {
	ctx, cancel := context.WithCancel(context.Background())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 8,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
	defer rdb.Close()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "d", Values: []string{"w", fmt.Sprint(w), "i", fmt.Sprint(i)}}).Result()
				if err != nil {
					return
				}
				st.mu.Lock()
				st.added[id] = true
				st.mu.Unlock()
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"d", ">"}, Count: 7}).Result()
			if err != nil && err != redis.Nil {
				return
			}
			var ids []string
			st.mu.Lock()
			for _, s := range res {
				for _, m := range s.Messages {
					st.delivered[m.ID] = true
					if st.maxDeliv == "" || idLess(st.maxDeliv, m.ID) {
						st.maxDeliv = m.ID
					}
					ids = append(ids, m.ID)
				}
			}
			// acknowledge every other batch's entries, so some stay pending
			if len(ids)%2 == 0 {
				for _, id := range ids {
					st.ackTried[id] = true
				}
				st.mu.Unlock()
				if len(ids) > 0 {
					if err := rdb.XAck(ctx, "d", "g", ids...).Err(); err != nil {
						return
					}
					st.mu.Lock()
					for _, id := range ids {
						st.acked[id] = true
					}
					st.mu.Unlock()
				}
				continue
			}
			st.mu.Unlock()
		}
	}()
	time.Sleep(d)
	crash()
	cancel()
	wg.Wait()
}

func verifyDurability(t *testing.T, addr string, st *durabilityState, round int) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	msgs, err := rdb.XRange(ctx, "d", "-", "+").Result()
	if err != nil {
		t.Fatalf("round %d: XRANGE: %v", round, err)
	}
	present := map[string]bool{}
	for _, m := range msgs {
		present[m.ID] = true
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var lost []string
	for id := range st.added {
		if !present[id] {
			lost = append(lost, id)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Fatalf("round %d: %d acknowledged XADDs lost after restart, e.g. %v", round, len(lost), lost[:min(5, len(lost))])
	}
	groups, err := rdb.XInfoGroups(ctx, "d").Result()
	if err != nil || len(groups) != 1 {
		t.Fatalf("round %d: XINFO GROUPS: %v %v", round, groups, err)
	}
	if st.maxDeliv != "" && idLess(groups[0].LastDeliveredID, st.maxDeliv) {
		t.Fatalf("round %d: group went backwards: last-delivered-id %s < delivered %s", round, groups[0].LastDeliveredID, st.maxDeliv)
	}
	pend, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "d", Group: "g", Start: "-", End: "+", Count: 1 << 20}).Result()
	if err != nil {
		t.Fatalf("round %d: XPENDING: %v", round, err)
	}
	pending := map[string]bool{}
	for _, p := range pend {
		pending[p.ID] = true
	}
	for id := range st.acked {
		if pending[id] {
			t.Fatalf("round %d: acknowledged XACK of %s lost: still pending", round, id)
		}
	}
	for id := range st.delivered {
		if !st.ackTried[id] && !pending[id] {
			t.Fatalf("round %d: delivered entry %s missing from the PEL", round, id)
		}
	}
	t.Logf("round %d: %d entries acknowledged, %d delivered, %d acked, %d pending: intact", round, len(st.added), len(st.delivered), len(st.acked), len(pending))
}
