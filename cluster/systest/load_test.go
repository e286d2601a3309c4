package systest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/redis/go-redis/v9"
)

// load runs, per key, one writer (XADD with a sequence field, through a
// ClusterClient) and one consumer (XREADGROUP > then XACK), recording what
// was acknowledged and delivered, and the longest write outage per key.
type load struct {
	keys     []string
	cc       *redis.ClusterClient
	stop     chan struct{}
	haltOnce sync.Once
	wg       sync.WaitGroup

	mu        sync.Mutex
	acked     map[string][]string // key → IDs acknowledged to the writer, in order
	delivered map[string][]string // key → IDs delivered to the group, in order
	lastOK    map[string]time.Time
	gapFrom   time.Time // outages are measured from here (the kill)
	gap       map[string]time.Duration
	errs      []error
}

func startLoad(t *testing.T, addrs []string, keys []string) *load {
	l := &load{keys: keys, stop: make(chan struct{}), acked: map[string][]string{}, delivered: map[string][]string{},
		lastOK: map[string]time.Time{}, gap: map[string]time.Duration{}}
	l.cc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: 2})
	ctx := context.Background()
	for _, k := range keys {
		for i := 0; ; i++ {
			err := l.cc.XGroupCreateMkStream(ctx, k, "g", "0").Err()
			if err == nil || strings.Contains(err.Error(), "BUSYGROUP") {
				break
			}
			if i == 100 {
				t.Fatalf("XGROUP CREATE %s: %v", k, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, k := range keys {
		l.wg.Add(2)
		go l.writer(k)
		go l.consumer(k)
	}
	return l
}

func (l *load) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *load) writer(k string) {
	defer l.wg.Done()
	for seq := 0; !l.stopped(); seq++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		id, err := l.cc.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"seq", strconv.Itoa(seq)}}).Result()
		cancel()
		now := time.Now()
		if err != nil {
			l.refreshOn(err)
			time.Sleep(20 * time.Millisecond)
			continue // outcome unknown or refused: not counted as acknowledged
		}
		l.mu.Lock()
		l.acked[k] = append(l.acked[k], id)
		if !l.gapFrom.IsZero() {
			from := l.lastOK[k]
			if from.Before(l.gapFrom) {
				from = l.gapFrom
			}
			if d := now.Sub(from); d > l.gap[k] {
				l.gap[k] = d
			}
		}
		l.lastOK[k] = now
		l.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// refreshOn makes the client re-read the slot map after an error that is
// not a server reply (connection refused or reset, timeout), as a careful
// go-redis application must: ClusterClient refreshes its slot map only on
// MOVED/ASK or once it is 10 s old, and the node that was killed answers
// no MOVED. When the killed node led every shard the writers saw, no
// MOVED arrived at all and the outage measured was that refresh period
// (up to 10 s minus the map's age at the kill), not the broker's failover.
func (l *load) refreshOn(err error) {
	var rerr redis.Error
	if err != nil && !errors.As(err, &rerr) {
		l.cc.ReloadState(context.Background())
	}
}

func (l *load) consumer(k string) {
	defer l.wg.Done()
	for !l.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		// Block bounds the wait: go-redis sends a zero Block as BLOCK 0
		// (wait for ever) and does not apply the context's deadline to the
		// read, so after halt a consumer whose stream got no new entry and
		// whose shard kept its leader waited for ever.
		res, err := l.cc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{k, ">"}, Count: 50,
			Block: 200 * time.Millisecond}).Result()
		cancel()
		if err != nil || len(res) == 0 || len(res[0].Messages) == 0 {
			l.refreshOn(err)
			time.Sleep(30 * time.Millisecond)
			continue
		}
		var ids []string
		for _, m := range res[0].Messages {
			ids = append(ids, m.ID)
		}
		l.mu.Lock()
		l.delivered[k] = append(l.delivered[k], ids...)
		l.mu.Unlock()
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		_ = l.cc.XAck(ctx, k, "g", ids...).Err() // an unacked entry stays pending: not re-delivered by ">"
		cancel()
	}
}

func (l *load) markKill() {
	l.mu.Lock()
	l.gapFrom = time.Now()
	l.mu.Unlock()
}

// halt stops the workload and waits for it; idempotent (defer it, and
// call it where the test stops writing).
func (l *load) halt() {
	l.haltOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// parseID orders stream IDs.
func parseID(id string) (ms, seq uint64) {
	a, b, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(a, 10, 64)
	seq, _ = strconv.ParseUint(b, 10, 64)
	return
}

func idLess(a, b string) bool {
	am, as := parseID(a)
	bm, bs := parseID(b)
	return am < bm || am == bm && as < bs
}

// checkAcked reads stream k (retrying for 5 s) and checks that no ID is
// in it twice and that every acknowledged ID is there, in order; it
// returns how many were acknowledged.
func checkAcked(ctx context.Context, t *testing.T, cc *redis.ClusterClient, k string, acked []string) int {
	t.Helper()
	var entries []redis.XMessage
	var err error
	for i := 0; i < 50; i++ {
		if entries, err = cc.XRange(ctx, k, "-", "+").Result(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("XRANGE %s: %v", k, err)
	}
	pos := map[string]int{}
	for i, e := range entries {
		if _, dup := pos[e.ID]; dup {
			t.Errorf("%s: ID %s twice", k, e.ID)
		}
		pos[e.ID] = i
	}
	prev := -1
	for _, id := range acked {
		p, ok := pos[id]
		if !ok {
			t.Errorf("%s: acknowledged %s missing", k, id)
			continue
		}
		if p <= prev {
			t.Errorf("%s: acknowledged %s out of order", k, id)
		}
		prev = p
	}
	return len(acked)
}

// verify checks every acknowledged XADD is in its stream exactly once and
// in order, that ">" never delivered an ID twice or out of order, and that
// the group's last-delivered-id is at least the last delivered ID.
func (l *load) verify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	total := 0
	for _, k := range l.keys {
		total += checkAcked(ctx, t, l.cc, k, l.acked[k])
		d := l.delivered[k]
		for i := 1; i < len(d); i++ {
			if !idLess(d[i-1], d[i]) {
				t.Errorf("%s: delivered %s after %s (re-delivery or backwards)", k, d[i], d[i-1])
			}
		}
		if len(d) > 0 {
			var gs []redis.XInfoGroup
			var err error
			for i := 0; i < 50; i++ {
				if gs, err = l.cc.XInfoGroups(ctx, k).Result(); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil || len(gs) != 1 {
				t.Fatalf("XINFO GROUPS %s: %v %v", k, gs, err)
			}
			if idLess(gs[0].LastDeliveredID, d[len(d)-1]) {
				t.Errorf("%s: group last-delivered-id %s behind delivered %s", k, gs[0].LastDeliveredID, d[len(d)-1])
			}
		}
	}
	if total == 0 {
		t.Fatal("no write acknowledged")
	}
	t.Logf("verified %d acknowledged XADDs over %d streams", total, len(l.keys))
}

// failoverTimes measures, per key, how long after t0 a write to it is
// first accepted through the nodes at addrs, following MOVED by hand (no
// client-side slot cache): the broker's own failover time. A key never
// accepted within budget gets budget.
func failoverTimes(addrs []string, keys []string, t0 time.Time, budget time.Duration) []time.Duration {
	out := make([]time.Duration, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithDeadline(context.Background(), t0.Add(budget))
			defer cancel()
			clients := map[string]*redis.Client{}
			defer func() {
				for _, c := range clients {
					c.Close()
				}
			}()
			out[i] = budget
			target := addrs[i%len(addrs)]
			for n := 0; ctx.Err() == nil; n++ {
				cl := clients[target]
				if cl == nil {
					cl = redis.NewClient(&redis.Options{Addr: target, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
						ReadTimeout: time.Second, WriteTimeout: time.Second})
					clients[target] = cl
				}
				err := cl.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"seq", "probe"}}).Err()
				if err == nil {
					out[i] = time.Since(t0)
					return
				}
				if f := strings.Fields(err.Error()); len(f) == 3 && f[0] == "MOVED" {
					target = f[2] // may still name the dead node until a new leader is elected
					continue
				}
				target = addrs[n%len(addrs)]
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return out
}

// TestSystemKillLeaderUnderLoad (issue point 5b): with XADD and
// XREADGROUP/XACK running on every shard of a 3-node cluster, the node
// leading the most shards is killed with SIGKILL (up to all 16 when the
// kill comes before leader balancing has spread them). Every shard accepts
// writes through the other two within a few election timeouts (measured
// without any client-side slot cache), the workload's ClusterClient
// follows within one command timeout of that, the node restarts and
// catches up, and no acknowledged write or group position is lost.
func TestSystemKillLeaderUnderLoad(t *testing.T) {
	c := startCluster(t, 3, 16)
	addrs := []string{c.procs[0].Addr, c.procs[1].Addr, c.procs[2].Addr}
	keys := keyPerShard("ld:", 16)
	l := startLoad(t, addrs, keys)
	defer l.cc.Close()
	stopped := false
	defer func() {
		if !stopped {
			l.halt()
		}
	}()
	time.Sleep(3 * time.Second)

	cl := client(c.procs[0])
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	count, _, err := leaders(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var victim *testkit.Node
	best := -1
	for _, p := range c.procs {
		if n := count[c.nodeID(p)]; n > best {
			victim, best = p, n
		}
	}
	t.Logf("killing %s (leads %d shards) with SIGKILL", victim.Name, best)
	var survivors []string
	for _, p := range c.procs {
		if p != victim {
			survivors = append(survivors, p.Addr)
		}
	}
	l.markKill()
	t0 := time.Now()
	victim.Kill()
	fo := failoverTimes(survivors, keys, t0, 20*time.Second)
	var fos []string
	var foWorst time.Duration
	for i, d := range fo {
		fos = append(fos, fmt.Sprintf("%d:%dms", i, d.Milliseconds()))
		foWorst = max(foWorst, d)
	}
	t.Logf("server-side failover per shard (first write accepted through a survivor, MOVED followed by hand): %s (worst %v)", strings.Join(fos, " "), foWorst)
	// The broker's bound: a follower notices the dead leader within one
	// heartbeat timeout (500ms, randomized up to 1s) and an election round
	// takes one election timeout (also 500ms-1s, randomized per group); 6s
	// leaves room for a few split votes among the shards' simultaneous
	// elections on a loaded machine.
	if foWorst > 6*time.Second {
		t.Errorf("worst server-side failover %v, want under 6s", foWorst)
	}
	// The workload's ClusterClient may lag the broker by one command still
	// retrying against the dead node (3s timeout) plus a slot-map reload.
	const clientLag = 5 * time.Second
	time.Sleep(time.Until(t0.Add(max(8*time.Second, foWorst+clientLag+time.Second))))

	l.mu.Lock()
	var worst time.Duration
	var gaps []string
	for i, k := range keys {
		g := l.gap[k]
		worst = max(worst, g)
		gaps = append(gaps, fmt.Sprintf("%d:%dms", i, g.Milliseconds()))
		if l.lastOK[k].Before(l.gapFrom) {
			t.Errorf("shard %d (%s): no write acknowledged to the workload since the kill", i, k)
		}
	}
	l.mu.Unlock()
	t.Logf("longest write outage per shard seen by the workload after the kill: %s (worst %v)", strings.Join(gaps, " "), worst)
	if worst > foWorst+clientLag {
		t.Errorf("worst workload outage %v, more than %v beyond the broker's failover (%v)", worst, clientLag, foWorst)
	}

	t1 := time.Now()
	victim.Start()
	l.halt()
	stopped = true
	// Catch-up: the restarted node's replicas (READONLY, stale reads) reach
	// the leaders' lengths.
	want := map[string]int64{}
	for _, k := range keys {
		n, err := l.cc.XLen(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		want[k] = n
	}
	vc := client(victim)
	defer vc.Close()
	caught := false
	for i := 0; i < 600 && !caught; i++ {
		conn := vc.Conn()
		ok := conn.ReadOnly(ctx).Err() == nil
		for _, k := range keys {
			if !ok {
				break
			}
			n, err := conn.XLen(ctx, k).Result()
			ok = err == nil && n == want[k]
		}
		conn.Close()
		caught = ok
		if !caught {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !caught {
		t.Fatalf("restarted node did not catch up within 60s")
	}
	t.Logf("restarted node caught up (all 16 streams, READONLY XLEN) %v after restart", time.Since(t1))
	l.verify(t)
}

// TestSystemGracefulShutdownHandsOver (issue point 4): SIGTERM on the node
// leading the most shards under load: it hands every leadership over before
// exiting, so the other nodes serve at once (outage per shard logged, well
// under an election timeout plus failure detection), and nothing
// acknowledged is lost.
func TestSystemGracefulShutdownHandsOver(t *testing.T) {
	c := startCluster(t, 3, 16)
	addrs := []string{c.procs[0].Addr, c.procs[1].Addr, c.procs[2].Addr}
	keys := keyPerShard("gs:", 16)
	l := startLoad(t, addrs, keys)
	defer l.cc.Close()
	halted := false
	defer func() {
		if !halted {
			l.halt()
		}
	}()
	time.Sleep(2 * time.Second)
	cl := client(c.procs[0])
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var victim *testkit.Node
	best := -1
	count, _, err := leaders(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.procs {
		if n := count[c.nodeID(p)]; n > best {
			victim, best = p, n
		}
	}
	id := c.nodeID(victim)
	l.markKill()
	t0 := time.Now()
	_ = victim.Stop(30 * time.Second)
	t.Logf("%s (led %d shards) exited on SIGTERM in %v", victim.Name, best, time.Since(t0))
	other := c.procs[0]
	if other == victim {
		other = c.procs[1]
	}
	oc := client(other)
	defer oc.Close()
	// Every shard hand-off succeeded before exit: the node logs each one
	// that failed or timed out (that shard would then wait for an
	// election).
	if b, err := os.ReadFile(victim.Log); err != nil {
		t.Fatal(err)
	} else {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `msg="leadership transfer on close`) {
				t.Errorf("hand-off failed before exit: %s", line)
			}
		}
	}
	// The survivor learns each new leader from its first heartbeat, so its
	// view may trail the exit by a moment; poll it (bounded).
	t2 := time.Now()
	for {
		count, _, err := leaders(ctx, oc)
		if err == nil && count[id] == 0 {
			t.Logf("%s's view shows no shard led by the stopped node %v after exit", other.Name, time.Since(t2))
			break
		}
		if time.Since(t2) > 10*time.Second {
			t.Fatalf("10s after exit %s still sees the stopped node leading %d shards (%v)", other.Name, count[id], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Server side: every shard takes a write, following MOVED by hand (no
	// client-side slot cache involved); a refusal sends the next attempt
	// back to the survivor.
	t1 := time.Now()
	clients := map[string]*redis.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, k := range keys {
		target := other.Addr
		ok := false
		for deadline := time.Now().Add(10 * time.Second); !ok && time.Now().Before(deadline); {
			if clients[target] == nil {
				clients[target] = redis.NewClient(&redis.Options{Addr: target, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
			}
			err := clients[target].XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"seq", "probe"}}).Err()
			switch {
			case err == nil:
				ok = true
			case strings.HasPrefix(err.Error(), "MOVED "):
				target = strings.Fields(err.Error())[2]
			default:
				target = other.Addr
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !ok {
			t.Fatalf("%s: no write accepted within 10s after the graceful stop", k)
		}
	}
	t.Logf("all 16 shards accepted a write %v after the stopped process exited", time.Since(t1))
	time.Sleep(3 * time.Second)
	l.mu.Lock()
	var worst time.Duration
	for _, k := range keys {
		worst = max(worst, l.gap[k])
	}
	l.mu.Unlock()
	t.Logf("worst per-shard write outage seen by the go-redis ClusterClient workload across the graceful stop: %v", worst)
	l.halt()
	halted = true
	l.verify(t)
}
