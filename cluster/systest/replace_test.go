package systest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// writeLoad is one XADD writer per key through a go-redis ClusterClient
// that retries nothing itself (MaxRedirects and MaxRetries -1): the writer
// retries only replies that say the command was not executed — MOVED, ASK,
// TRYAGAIN, CLUSTERDOWN — and counts every other error (an UNKNOWN
// outcome, a connection error, a timeout) as an error, after which it
// reloads the slot map. It records each acknowledged ID and the longest
// time a key went without an acknowledged write.
type writeLoad struct {
	keys     []string
	cc       *redis.ClusterClient
	stop     chan struct{}
	haltOnce sync.Once
	wg       sync.WaitGroup

	mu      sync.Mutex
	acked   map[string][]string
	lastOK  map[string]time.Time
	gap     map[string]time.Duration
	retries map[string]int // allowed retries by reply kind
	errs    map[string]int // other errors by kind
	samples []string       // a few error texts for the log
}

func startWriteLoad(t *testing.T, addrs, keys []string) *writeLoad {
	l := &writeLoad{keys: keys, stop: make(chan struct{}), acked: map[string][]string{}, lastOK: map[string]time.Time{},
		gap: map[string]time.Duration{}, retries: map[string]int{}, errs: map[string]int{}}
	l.cc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: -1, MaxRetries: -1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second})
	now := time.Now()
	for _, k := range keys {
		l.lastOK[k] = now
		l.wg.Add(1)
		go l.writer(k)
	}
	return l
}

// retryable reports whether err is a reply that says the command was not
// executed and may be sent again.
func retryable(err error) (string, bool) {
	for _, p := range []string{"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN"} {
		if strings.HasPrefix(err.Error(), p+" ") {
			return p, true
		}
	}
	return "", false
}

func (l *writeLoad) writer(k string) {
	defer l.wg.Done()
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		id, err := l.cc.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"seq", strconv.Itoa(seq)}}).Result()
		cancel()
		now := time.Now()
		l.mu.Lock()
		switch {
		case err == nil:
			l.acked[k] = append(l.acked[k], id)
			l.gap[k] = max(l.gap[k], now.Sub(l.lastOK[k]))
			l.lastOK[k] = now
		default:
			if kind, ok := retryable(err); ok {
				l.retries[kind]++
			} else {
				l.errs[kind2(err)]++
				if len(l.samples) < 5 {
					l.samples = append(l.samples, err.Error())
				}
			}
		}
		l.mu.Unlock()
		if err != nil {
			if _, ok := retryable(err); !ok {
				l.cc.ReloadState(context.Background())
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kind2 classifies an error that is not a server reply as "conn".
func kind2(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		return kind(err)
	}
	if strings.Contains(err.Error(), "timeout") {
		return "timeout"
	}
	return "conn"
}

// report returns the XADDs acknowledged so far (all of them, not since the
// last report), and the retries and errors since the last report with the
// longest gap per key since then.
func (l *writeLoad) report() (acked int, gap time.Duration, retries, errs map[string]int, samples []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range l.keys {
		acked += len(l.acked[k])
		gap = max(gap, l.gap[k], time.Since(l.lastOK[k]))
		l.gap[k] = 0
	}
	retries, errs, samples = l.retries, l.errs, l.samples
	l.retries, l.errs, l.samples = map[string]int{}, map[string]int{}, nil
	return
}

// halt stops the writers and waits for them; idempotent.
func (l *writeLoad) halt() {
	l.haltOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// verify checks that every acknowledged XADD is in its stream exactly
// once, in order.
func (l *writeLoad) verify(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	total := 0
	for _, k := range l.keys {
		total += checkAcked(ctx, t, l.cc, k, l.acked[k])
	}
	return total
}

// TestSystemRollingReplacement (points 3 and 5): the three nodes a
// cluster was formed with are replaced one by one — a new node joins, then
// RAFTSTREAM REMOVE-NODE drops an original — under a go-redis
// ClusterClient writing to every shard. The writer retries only MOVED,
// ASK, TRYAGAIN and CLUSTERDOWN; every other error is counted and
// reported; no key goes without an acknowledged write for long. At the end
// the three new nodes are the controller's voters and every shard's, and
// every acknowledged XADD is present exactly once. Then the new cluster
// loses a node (SIGKILL of the controller leader) and writes continue, and
// it takes another join.
func TestSystemRollingReplacement(t *testing.T) {
	const shards = 8
	c := startCluster(t, 3, shards)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	orig := slices.Clone(c.procs)
	var origIDs []string
	for _, p := range orig {
		origIDs = append(origIDs, c.nodeID(p))
	}
	keys := keyPerShard("rr:", shards)
	l := startWriteLoad(t, []string{orig[0].Addr, orig[1].Addr, orig[2].Addr}, keys)
	defer l.cc.Close()
	defer l.halt()
	time.Sleep(2 * time.Second)
	const maxGap = 10 * time.Second
	phase := func(what string) {
		t.Helper()
		n, gap, retries, errs, samples := l.report()
		t.Logf("%s: %d acknowledged so far, longest gap %v, retried %v, errors %v %q", what, n, gap.Round(time.Millisecond), retries, errs, samples)
		if gap > maxGap {
			t.Errorf("%s: a shard went %v without an acknowledged write", what, gap)
		}
	}
	phase("before")

	var fresh []*testkit.Node
	var freshIDs []string
	for i, old := range orig {
		nn := c.newJoiner("--shards", strconv.Itoa(shards))
		t0 := time.Now()
		nn.Start()
		id := c.nodeID(nn)
		fresh, freshIDs = append(fresh, nn), append(freshIDs, id)
		waitUntil(t, nn.Name+" listed", 60*time.Second, func() bool {
			line, _ := clusterNodesLine(ctx, nn.Addr, id)
			return line != ""
		})
		t1 := time.Now()
		if err := removeNode(ctx, nn.Addr, origIDs[i]); err != nil {
			t.Fatalf("REMOVE-NODE %s: %v", old.Name, err)
		}
		t.Logf("round %d: %s joined in %v, %s removed in %v", i+1, nn.Name, t1.Sub(t0).Round(time.Millisecond), old.Name, time.Since(t1).Round(time.Millisecond))
		// The removed node serves no shard (it redirects); let the client
		// reload its slot map before the process goes.
		l.cc.ReloadState(ctx)
		time.Sleep(time.Second)
		if err := old.Stop(15 * time.Second); err != nil {
			t.Errorf("%s: %v", old.Name, err)
		}
		phase(fmt.Sprintf("round %d", i+1))
	}

	// The new nodes are the controller's voters and every shard's.
	addrs := []string{fresh[0].Addr, fresh[1].Addr, fresh[2].Addr}
	var ctrlLeader string
	for _, p := range fresh {
		info, err := infoMap(ctx, p.Addr, "bus")
		if err != nil {
			t.Fatal(err)
		}
		v := splitComma(info["controller_voters"])
		slices.Sort(v)
		want := slices.Clone(freshIDs)
		slices.Sort(want)
		if !slices.Equal(v, want) {
			t.Errorf("%s: controller voters %v, want the three new nodes", p.Name, v)
		}
		if info["controller_role"] == "leader" {
			ctrlLeader = p.Name
		}
	}
	confs := leaderConfs(ctx, addrs)
	for s := 0; s < shards; s++ {
		v := slices.Clone(confs[s].voters)
		slices.Sort(v)
		want := slices.Clone(freshIDs)
		slices.Sort(want)
		if !slices.Equal(v, want) {
			t.Errorf("shard %d: voters %v, want the three new nodes", s, v)
		}
	}
	t.Logf("replaced: controller voters and every shard's voters are the 3 new nodes; controller leader %s", ctrlLeader)
	// No joined node stood in controller elections it could not win (the
	// joined node's replica used to restart an election every ~1.5 s).
	for _, p := range fresh {
		b, err := os.ReadFile(p.Log)
		if err != nil {
			t.Fatal(err)
		}
		elections := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "group=controller") && strings.Contains(line, "election") {
				elections++
			}
		}
		if elections > 3 {
			t.Errorf("%s: %d controller election log lines", p.Name, elections)
		}
	}

	// Lose one node (the controller leader): writes continue.
	victim := fresh[0]
	for _, p := range fresh {
		if p.Name == ctrlLeader {
			victim = p
		}
	}
	var survivors []string
	for _, p := range fresh {
		if p != victim {
			survivors = append(survivors, p.Addr)
		}
	}
	victim.Kill()
	t.Logf("killed %s: every shard accepted a write through the survivors %v later (server side)",
		victim.Name, writeFollowingMoved(t, survivors[0], keys, 30*time.Second))
	time.Sleep(3 * time.Second)
	phase("after the kill")

	// Another join, through the nodes that are left.
	c.buses = nil
	for _, p := range fresh {
		if p != victim {
			c.buses = append(c.buses, p.BusAddr())
		}
	}
	n7 := c.newJoiner("--shards", strconv.Itoa(shards))
	n7.Start()
	id7 := c.nodeID(n7)
	d := waitUntil(t, "the new node holds replicas", 90*time.Second, func() bool {
		for _, r := range leaderConfs(ctx, append(survivors, n7.Addr)) {
			if slices.Contains(r.voters, id7) {
				return true
			}
		}
		return false
	})
	t.Logf("%s joined the damaged cluster and is a shard voter %v after start", n7.Name, d)
	time.Sleep(2 * time.Second)
	phase("after the join")
	l.halt()
	t.Logf("verified %d acknowledged XADDs over %d streams, each present exactly once", l.verify(t), len(keys))
}
