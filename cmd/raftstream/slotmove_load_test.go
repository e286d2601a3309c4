package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// loadStream is one orders:{i} stream's history as the clients saw it.
type loadStream struct {
	key  string
	slot int
	mu   sync.Mutex
	// acked[seq] is the ID XADD ... IDMP p<i> <seq> returned.
	acked map[int]string
	// delivered lists the IDs the group handed out, in delivery order.
	delivered []string
}

// loadErrors counts the errors that reached the workload, by kind.
type loadErrors struct {
	redirect  atomic.Int64 // ASK, MOVED or TRYAGAIN surfacing: must stay 0
	transient atomic.Int64 // around a killed node: unknown outcome, connection loss, no leader
	other     atomic.Int64
	mu        sync.Mutex
	samples   []string
}

func (le *loadErrors) note(op string, err error) {
	s := err.Error()
	switch {
	case strings.HasPrefix(s, "ASK ") || strings.HasPrefix(s, "MOVED ") || strings.HasPrefix(s, "TRYAGAIN the key") || strings.HasPrefix(s, "TRYAGAIN Multiple"):
		le.redirect.Add(1)
	case strings.HasPrefix(s, "UNKNOWN") || strings.HasPrefix(s, "TRYAGAIN") || strings.HasPrefix(s, "CLUSTERDOWN") ||
		strings.Contains(s, "connection") || strings.Contains(s, "EOF") || strings.Contains(s, "i/o timeout") ||
		strings.Contains(s, "shutting down") || errors.Is(err, context.DeadlineExceeded):
		le.transient.Add(1)
	default:
		le.other.Add(1)
	}
	le.mu.Lock()
	if len(le.samples) < 20 {
		le.samples = append(le.samples, time.Now().Format("15:04:05.000 ")+op+": "+s)
	}
	le.mu.Unlock()
}

// TestSlotMovesUnderLoad is the acceptance test of online slot moves: a
// 3-node cluster of 3 shards under XADD (with IDMP) and XREADGROUP/XACK load
// from go-redis ClusterClients on orders:{0..15}, while the slots of those
// streams move 20 times between shards, some moves interrupted by a SIGKILL
// of the source or the target shard's leader (restarted a few seconds
// later). Checked: every acknowledged XADD is in its stream exactly once and
// in order; the group never hands out an entry twice or goes back; IDMP
// refuses duplicates across moves; no ASK/MOVED/TRYAGAIN reaches a client;
// redis-cli --cluster check passes after every completed move.
// RAFTSTREAM_SLOTMOVES=n changes the number of moves.
func TestSlotMovesUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("long process test")
	}
	redis.SetLogger(quietLogger{})
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RAFTSTREAM_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (RAFTSTREAM_SEED replays)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	moves := 20
	if s := os.Getenv("RAFTSTREAM_SLOTMOVES"); s != "" {
		moves, _ = strconv.Atoi(s)
	}
	nodes := startCluster(t, 3, 3, strings.Fields(os.Getenv("RAFTSTREAM_TEST_ARGS"))...)
	addrs := addrsOf(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	newClient := func() *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Protocol: 2, DisableIdentity: true,
			MaxRedirects: 40, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
			MinRetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 500 * time.Millisecond})
		t.Cleanup(func() { c.Close() })
		return c
	}
	streams := make([]*loadStream, 16)
	setup := newClient()
	for i := range streams {
		k := fmt.Sprintf("orders:{%d}", i)
		streams[i] = &loadStream{key: k, slot: slots.OfString(strconv.Itoa(i)), acked: map[int]string{}}
		for {
			err := setup.XGroupCreateMkStream(ctx, k, "billing", "0").Err()
			if err == nil || strings.Contains(err.Error(), "BUSYGROUP") {
				break
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	var errs loadErrors
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var xadds, reads atomic.Int64
	for i, st := range streams {
		prod, cons := newClient(), newClient()
		wg.Add(2)
		go func() { // producer: one XADD at a time, IDMP p<i> <seq>
			defer wg.Done()
			pid := "p" + strconv.Itoa(i)
			for seq := 1; ; seq++ {
				for {
					select {
					case <-stop:
						return
					default:
					}
					id, err := prod.Do(ctx, "XADD", st.key, "IDMP", pid, strconv.Itoa(seq), "*", "seq", strconv.Itoa(seq)).Text()
					if err == nil {
						st.mu.Lock()
						st.acked[seq] = id
						st.mu.Unlock()
						xadds.Add(1)
						break
					}
					if ctx.Err() != nil {
						return
					}
					errs.note("XADD", err) // retried with the same IID: IDMP makes it exactly once
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
		go func() { // consumer: XREADGROUP > then XACK
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := cons.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "billing", Consumer: "c" + strconv.Itoa(i),
					Streams: []string{st.key, ">"}, Count: 50, Block: 200 * time.Millisecond}).Result()
				if errors.Is(err, redis.Nil) {
					continue
				}
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					errs.note("XREADGROUP", err)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				var ids []string
				for _, s := range res {
					for _, m := range s.Messages {
						ids = append(ids, m.ID)
					}
				}
				st.mu.Lock()
				st.delivered = append(st.delivered, ids...)
				st.mu.Unlock()
				reads.Add(1)
				for len(ids) > 0 {
					if err := cons.XAck(ctx, st.key, "billing", ids...).Err(); err == nil {
						break
					} else if ctx.Err() != nil {
						return
					} else {
						errs.note("XACK", err)
						time.Sleep(50 * time.Millisecond)
					}
				}
			}
		}()
	}

	// The moves.
	type moveResult struct {
		stream, slot, from, to int
		kill                   string
		took, check            time.Duration
	}
	var results []moveResult
	time.Sleep(time.Second)
	for m := 0; m < moves; m++ {
		i := rng.IntN(len(streams))
		st := streams[i]
		owner, _, _, err := slotMapOf(addrs[m%3])
		if err != nil {
			t.Fatal(err)
		}
		from := owner[st.slot]
		to := (from + 1 + rng.IntN(2)) % 3
		kill := ""
		switch m % 5 {
		case 2:
			kill = "source"
		case 4:
			kill = "target"
		}
		leaders := shardLeaders(addrs)
		start := time.Now()
		ids, err := moveSlot(addrs[rng.IntN(3)], st.slot, to)
		if err != nil || len(ids) != 1 {
			t.Fatalf("move %d: %v %v", m, ids, err)
		}
		var killed *testkit.Node
		if kill != "" {
			victim := leaders[from]
			if kill == "target" {
				victim = leaders[to]
			}
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			if killed = nodeByAddr(nodes, victim); killed != nil {
				killed.Kill()
				kill += " " + killed.Name
			}
		}
		// The move completes on the two live nodes (a majority of every
		// shard), driven by whoever leads the source now.
		live := addrs
		if killed != nil {
			live = slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == killed.Addr })
		}
		if err := waitSlotOwnerLog(ctx, live, st.slot, to, t.Logf); err != nil {
			t.Fatalf("move %d (%s slot %d %d->%d, kill %q): %v", m, st.key, st.slot, from, to, kill, err)
		}
		took := time.Since(start)
		if killed != nil {
			killed.Start()
			if err := waitSlotOwner(ctx, addrs, st.slot, to); err != nil {
				t.Fatalf("move %d: restarted %s: %v", m, killed.Name, err)
			}
		}
		out, ctook, err := waitClusterCheck(ctx, addrs[rng.IntN(3)])
		if err != nil {
			t.Fatalf("move %d: redis-cli --cluster check never passed: %v\n%s", m, err, out)
		}
		results = append(results, moveResult{i, st.slot, from, to, kill, took, ctook})
		t.Logf("move %2d: %s slot %5d shard %d -> %d kill %-10q done in %v, cluster check passed %v later",
			m, st.key, st.slot, from, to, kill, took.Round(time.Millisecond), ctook.Round(time.Millisecond))
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	// IDMP across moves: every stream's last message, sent again, is
	// refused as a duplicate (same ID, nothing added). (A stream remembers
	// its producers' last 100 IIDs for 100 s: stream-idmp-maxsize and
	// -duration.)
	check := newClient()
	for i, st := range streams {
		before, err := check.XLen(ctx, st.key).Result()
		if err != nil {
			t.Fatal(err)
		}
		lastSeq := 0
		for s := range st.acked {
			lastSeq = max(lastSeq, s)
		}
		id, err := check.Do(ctx, "XADD", st.key, "IDMP", "p"+strconv.Itoa(i), strconv.Itoa(lastSeq), "*", "seq", strconv.Itoa(lastSeq)).Text()
		if err != nil || id != st.acked[lastSeq] {
			t.Errorf("%s: IDMP resend of seq %d = %q, %v; acknowledged %q", st.key, lastSeq, id, err, st.acked[lastSeq])
		}
		if after, _ := check.XLen(ctx, st.key).Result(); after != before {
			t.Errorf("%s: IDMP resend added an entry (%d -> %d)", st.key, before, after)
		}
	}
	// Every acknowledged XADD exactly once, in order; deliveries never go
	// back nor repeat.
	total, delivered := 0, 0
	for _, st := range streams {
		entries, err := check.XRange(ctx, st.key, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		seqSeen := map[string]bool{}
		for j, e := range entries {
			pos[e.ID] = j
			s := fmt.Sprint(e.Values["seq"])
			if seqSeen[s] {
				t.Errorf("%s: seq %s appears twice", st.key, s)
			}
			seqSeen[s] = true
		}
		seqs := make([]int, 0, len(st.acked))
		for s := range st.acked {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		last := -1
		for _, s := range seqs {
			id := st.acked[s]
			p, ok := pos[id]
			if !ok {
				t.Errorf("%s: acknowledged seq %d (%s) is missing", st.key, s, id)
				continue
			}
			if v := fmt.Sprint(entries[p].Values["seq"]); v != strconv.Itoa(s) {
				t.Errorf("%s: %s holds seq %s, acknowledged as seq %d", st.key, id, v, s)
			}
			if p <= last {
				t.Errorf("%s: seq %d out of order", st.key, s)
			}
			last = p
		}
		total += len(st.acked)
		seen := map[string]bool{}
		for j, id := range st.delivered {
			if seen[id] {
				t.Errorf("%s: %s delivered twice", st.key, id)
			}
			seen[id] = true
			if j > 0 && !idLess(st.delivered[j-1], id) {
				t.Errorf("%s: group went back: %s after %s", st.key, id, st.delivered[j-1])
			}
		}
		delivered += len(st.delivered)
	}
	t.Logf("%d moves, %d XADDs acknowledged (%d entries delivered to the group, %d reads) ; errors reaching clients: %d redirects, %d transient (kills), %d other; samples %q",
		len(results), total, delivered, reads.Load(), errs.redirect.Load(), errs.transient.Load(), errs.other.Load(), errs.samples)
	if errs.redirect.Load() != 0 || errs.other.Load() != 0 {
		t.Errorf("errors reached the clients: %d redirects, %d other (%q)", errs.redirect.Load(), errs.other.Load(), errs.samples)
	}
	var tookAll []time.Duration
	for _, r := range results {
		tookAll = append(tookAll, r.took)
	}
	slices.Sort(tookAll)
	if len(tookAll) > 0 {
		t.Logf("move durations: median %v, max %v", tookAll[len(tookAll)/2].Round(time.Millisecond), tookAll[len(tookAll)-1].Round(time.Millisecond))
	}
}
