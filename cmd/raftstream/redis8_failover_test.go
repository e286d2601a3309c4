package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
)

// Acceptance test of the Redis 8.x stream features under failover: an
// idempotent producer (XADD ... IDMP) and a consumer using XREADGROUP ...
// CLAIM, XACKDEL, XNACK and a dead-letter stream run against a 3-node
// cluster of real processes while the leader of their shard is SIGKILLed and
// restarted; then every node restarts and recovers from its snapshot.

const (
	r8Key   = "orders:{7}"
	r8DLQ   = "orders:{7}:dlq"
	r8Group = "billing"
	r8Audit = "audit" // never reads: keeps every entry referenced for XACKDEL ACKED
	r8PID   = "producer-1"
	r8N     = 240 // logical messages
	r8Procs = 4   // concurrent producer connections (disjoint iids, one pid)
)

// startR8Cluster starts a 3-node cluster of 3 shards (3 replicas each)
// and aggressive snapshotting, so restarts recover from snapshot + a short
// log tail and a lagging replica may catch up by snapshot install.
func startR8Cluster(t *testing.T) []*testkit.Node {
	t.Helper()
	return startCluster(t, 3, 3, "--snapshot-interval", "200ms", "--snapshot-threshold", "32", "--trailing-logs", "16")
}

// r8Client sends commands to the current leader of r8Key's shard, following
// MOVED and reconnecting after connection errors. One goroutine each.
type r8Client struct {
	addrs []string
	cur   string
	conn  *testkit.Conn
	// uncertain: the last call resent its command after an error that
	// leaves the outcome of an earlier attempt unknown (connection error
	// after sending, UNKNOWN).
	uncertain bool
}

// do sends args once and returns the raw reply; connection errors close
// the connection (the next call redials) and are returned.
func (c *r8Client) do(args ...string) ([]byte, error) {
	if c.conn == nil {
		conn, err := testkit.Dial(c.cur)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	if err := c.conn.Send(args...); err != nil {
		c.reset()
		c.uncertain = true
		return nil, err
	}
	c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	r, err := c.conn.ReadReply()
	if err != nil {
		c.reset()
		c.uncertain = true
		return nil, err
	}
	return r, nil
}

func (c *r8Client) reset() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// retryStats counts what clients went through.
type retryStats struct {
	moved, tryagain, unknown, connErr, clusterDown atomic.Int64
}

// call runs args until a reply that is not a redirection or a transient
// error (MOVED, TRYAGAIN, UNKNOWN, CLUSTERDOWN, connection errors), until
// deadline. The same argv is resent on every attempt.
func (c *r8Client) call(st *retryStats, deadline time.Time, args ...string) ([]byte, error) {
	var last string
	c.uncertain = false
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		r, err := c.do(args...)
		switch {
		case err != nil:
			st.connErr.Add(1)
			last = err.Error()
			// the node may be dead: try another one (it redirects)
			c.cur = c.addrs[(attempt+1)%len(c.addrs)]
			time.Sleep(20 * time.Millisecond)
			continue
		case bytes.HasPrefix(r, []byte("-MOVED ")):
			st.moved.Add(1)
			f := strings.Fields(strings.TrimSpace(string(r)))
			if len(f) == 3 && f[2] != c.cur {
				c.reset()
				c.cur = f[2]
			} else {
				time.Sleep(20 * time.Millisecond)
			}
			continue
		case bytes.HasPrefix(r, []byte("-TRYAGAIN")):
			st.tryagain.Add(1)
		case bytes.HasPrefix(r, []byte("-UNKNOWN")):
			st.unknown.Add(1)
			c.uncertain = true
		case bytes.HasPrefix(r, []byte("-CLUSTERDOWN")):
			st.clusterDown.Add(1)
		default:
			return r, nil
		}
		last = strings.TrimSpace(string(r))
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("%v: no answer before the deadline (last: %s)", args, last)
}

// entryFields returns the entry's field map from an XRANGE/XREADGROUP entry.
func entryFields(e any) (id string, f map[string]string, extra []any, err error) {
	a, ok := e.([]any)
	if !ok || len(a) < 2 {
		return "", nil, nil, fmt.Errorf("bad entry %#v", e)
	}
	id, _ = a[0].(string)
	kv, _ := a[1].([]any)
	f = map[string]string{}
	for k := 0; k+1 < len(kv); k += 2 {
		f[kv[k].(string)] = kv[k+1].(string)
	}
	return id, f, a[2:], nil
}

// TestRedis8FailoverIdempotentProducer is the acceptance test of Redis 8.x
// stream features on a failing-over cluster:
//
//  1. a producer adds r8N logical messages with XADD ... IDMP producer-1
//     <iid> *, resending the same iid after MOVED, TRYAGAIN, UNKNOWN and
//     connection errors, while the shard's leader is SIGKILLed and later
//     restarted: the stream holds every message exactly once, and every ID
//     a message was answered with is its one ID;
//  2. a consumer doing XREADGROUP ... CLAIM, XACKDEL ACKED and XNACK
//     (FAIL / FATAL to a dead-letter stream / SILENT RETRYCOUNT) across the
//     kill leaves the same group state on every replica: XINFO STREAM FULL,
//     XPENDING (summary and extended, idle masked), XRANGE of the stream and
//     of the dead-letter stream read with READONLY on each node;
//  3. after every node is SIGKILLed and restarted (recovering from
//     snapshots), resending old iids returns their original IDs and adds
//     nothing.
func TestRedis8FailoverIdempotentProducer(t *testing.T) {
	start := time.Now()
	nodes := startR8Cluster(t)
	addrs := make([]string, len(nodes))
	for i, nd := range nodes {
		addrs[i] = nd.Addr
	}
	deadline := time.Now().Add(50 * time.Second)
	st := &retryStats{}
	setup := &r8Client{addrs: addrs, cur: addrs[0]}
	defer setup.reset()
	mustOK := func(args ...string) {
		t.Helper()
		r, err := setup.call(st, deadline, args...)
		if err != nil || string(r) != "+OK\r\n" {
			t.Fatalf("%v: %q %v", args, r, err)
		}
	}
	mustOK("XGROUP", "CREATE", r8Key, r8Group, "0", "MKSTREAM")
	mustOK("XGROUP", "CREATE", r8Key, r8Audit, "0")
	mustOK("XCFGSET", r8Key, "IDMP-DURATION", "86400", "IDMP-MAXSIZE", "10000")
	mustOK("XGROUP", "SETDLQ", r8Key, r8Group, "5", r8DLQ)

	// 1. Producers.
	var (
		mu       sync.Mutex
		returned = make(map[int][]string) // iid -> every ID answered
		resent   []int                    // iids whose first attempt's outcome was unknown
		acked    atomic.Int64
		prodErr  = make(chan error, r8Procs)
		prodWG   sync.WaitGroup
	)
	for p := 0; p < r8Procs; p++ {
		prodWG.Add(1)
		go func(p int) {
			defer prodWG.Done()
			c := &r8Client{addrs: addrs, cur: addrs[p%len(addrs)]}
			defer c.reset()
			for i := p; i < r8N; i += r8Procs {
				iid := strconv.Itoa(i)
				r, err := c.call(st, deadline, "XADD", r8Key, "IDMP", r8PID, "iid-"+iid, "*",
					"iid", iid, "amount", strconv.Itoa(i*7%100))
				if err != nil {
					prodErr <- err
					return
				}
				v, perr := wire.Parse(r)
				id, ok := v.(string)
				if perr != nil || !ok {
					prodErr <- fmt.Errorf("XADD iid %d: %q", i, r)
					return
				}
				mu.Lock()
				returned[i] = append(returned[i], id)
				if c.uncertain {
					resent = append(resent, i)
				}
				mu.Unlock()
				acked.Add(1)
			}
		}(p)
	}

	// 2. Consumer: runs until the producers are done and nothing is left
	// to read or claim.
	prodDone := make(chan struct{})
	consErr := make(chan error, 1)
	var consWG sync.WaitGroup
	var delivered, claimed, nacked, ackdel atomic.Int64
	// Written by the consumer goroutine, read after consWG.Wait.
	ackedIDs, fatalIDs := map[string]bool{}, map[string]bool{}
	consWG.Add(1)
	go func() {
		defer consWG.Done()
		c := &r8Client{addrs: addrs, cur: addrs[1]}
		defer c.reset()
		fail := func(err error) { consErr <- err }
		empty := 0
		for time.Now().Before(deadline) {
			r, err := c.call(st, deadline, "XREADGROUP", "GROUP", r8Group, "w1", "COUNT", "8",
				"CLAIM", "60000", "STREAMS", r8Key, ">")
			if err != nil {
				fail(err)
				return
			}
			v, err := wire.Parse(r)
			if err != nil {
				fail(fmt.Errorf("XREADGROUP: %q: %v", r, err))
				return
			}
			if e, ok := v.(wire.Error); ok {
				fail(fmt.Errorf("XREADGROUP: %s", e))
				return
			}
			var entries []any
			if streams, ok := v.([]any); ok && len(streams) == 1 {
				if kv, ok := streams[0].([]any); ok && len(kv) == 2 {
					entries, _ = kv[1].([]any)
				}
			} else if v != nil {
				fail(fmt.Errorf("XREADGROUP: unexpected reply %q", r))
				return
			}
			if len(entries) == 0 {
				select {
				case <-prodDone:
					// one more read after the producers are done: the
					// previous one may have claimed up to COUNT only
					if empty++; empty >= 2 {
						return
					}
				default:
					time.Sleep(10 * time.Millisecond)
				}
				continue
			}
			empty = 0
			for _, e := range entries {
				id, f, extra, err := entryFields(e)
				if err != nil {
					fail(err)
					return
				}
				i, _ := strconv.Atoi(f["iid"])
				// With CLAIM every entry has four elements: a new one with
				// idle time 0 and delivery count 0, a claimed one with its
				// idle time and previous count (an XNACKed entry was
				// delivered at least once or given RETRYCOUNT 2).
				wasClaimed := len(extra) == 2 && fmt.Sprint(extra[1]) != "0"
				if len(extra) != 2 {
					fail(fmt.Errorf("XREADGROUP ... CLAIM entry %v has %d extra elements, want 2", e, len(extra)))
					return
				}
				delivered.Add(1)
				var args []string
				switch i % 5 {
				case 0: // acknowledged; "audit" has not read it, so ACKED keeps it
					args = []string{"XACKDEL", r8Key, r8Group, "ACKED", "IDS", "1", id}
				case 1: // given back once, acknowledged when claimed again
					if wasClaimed {
						claimed.Add(1)
						args = []string{"XACKDEL", r8Key, r8Group, "ACKED", "IDS", "1", id}
					} else {
						args = []string{"XNACK", r8Key, r8Group, "FAIL", "IDS", "1", id}
					}
				case 2: // left pending
				case 3: // fatal: the next claim moves it to the dead-letter stream
					args = []string{"XNACK", r8Key, r8Group, "FATAL", "IDS", "1", id}
				case 4: // given back with an explicit count, then left pending
					if wasClaimed {
						claimed.Add(1)
					} else {
						args = []string{"XNACK", r8Key, r8Group, "SILENT", "IDS", "1", id, "RETRYCOUNT", "2"}
					}
				}
				if args == nil {
					continue
				}
				r, err := c.call(st, deadline, args...)
				if err != nil {
					fail(err)
					return
				}
				want := ":1\r\n"
				if args[0] == "XACKDEL" {
					ackdel.Add(1)
					ackedIDs[id] = true
					want = "*1\r\n:2\r\n"
					// a resend after a lost reply finds it no longer pending
					if string(r) == "*1\r\n:-1\r\n" && c.uncertain {
						continue
					}
				} else {
					nacked.Add(1)
					if args[3] == "FATAL" {
						fatalIDs[id] = true
					}
					// XNACK is idempotent: a resend still finds it pending
				}
				if string(r) != want {
					fail(fmt.Errorf("%v: %q, want %q", args, r, want))
					return
				}
			}
		}
		fail(errors.New("consumer: deadline"))
	}()

	// Kill the shard's leader once a third of the messages are in, restart
	// it after two thirds.
	waitAcked := func(n int64) {
		t.Helper()
		for acked.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d messages acknowledged before the deadline", acked.Load(), n)
			}
			select {
			case err := <-prodErr:
				t.Fatalf("producer: %v", err)
			case err := <-consErr:
				t.Fatalf("consumer: %v", err)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	waitAcked(r8N / 3)
	leader := shardLeader(t, addrs)
	killedAt := acked.Load()
	nodes[leader].Kill()
	t.Logf("SIGKILLed leader node %d (%s) after %d acknowledged messages", leader, addrs[leader], killedAt)
	waitAcked(2 * r8N / 3)
	restartedAt := acked.Load()
	nodes[leader].Start()
	t.Logf("restarted node %d after %d acknowledged messages", leader, restartedAt)
	prodWG.Wait()
	close(prodDone)
	select {
	case err := <-prodErr:
		t.Fatalf("producer: %v", err)
	default:
	}
	consWG.Wait()
	select {
	case err := <-consErr:
		t.Fatalf("consumer: %v", err)
	default:
	}
	if killedAt >= r8N || restartedAt >= r8N {
		t.Fatalf("the kill (%d) or restart (%d) came after the producers were done", killedAt, restartedAt)
	}

	// Exactly once, and every answered ID is the message's one ID.
	r, err := setup.call(st, deadline, "XRANGE", r8Key, "-", "+")
	if err != nil {
		t.Fatal(err)
	}
	v, err := wire.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := v.([]any)
	idOf := map[int]string{}
	for _, e := range entries {
		id, f, _, err := entryFields(e)
		if err != nil {
			t.Fatal(err)
		}
		i, err := strconv.Atoi(f["iid"])
		if err != nil {
			t.Fatalf("entry %s has no iid: %v", id, f)
		}
		if prev, dup := idOf[i]; dup {
			t.Errorf("message %d added twice: %s and %s", i, prev, id)
		}
		idOf[i] = id
	}
	answers := 0
	for i := 0; i < r8N; i++ {
		id, ok := idOf[i]
		if !ok {
			t.Errorf("message %d missing from the stream", i)
		}
		if len(returned[i]) == 0 {
			t.Errorf("message %d never acknowledged", i)
		}
		for _, got := range returned[i] {
			answers++
			if got != id {
				t.Errorf("message %d answered %s, its entry is %s", i, got, id)
			}
		}
	}
	if len(entries) != r8N {
		t.Errorf("stream holds %d entries, want %d", len(entries), r8N)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("producer: %d messages, %d answers; retries: MOVED %d, TRYAGAIN %d, UNKNOWN %d, CLUSTERDOWN %d, connection errors %d",
		r8N, answers, st.moved.Load(), st.tryagain.Load(), st.unknown.Load(), st.clusterDown.Load(), st.connErr.Load())
	t.Logf("consumer: %d delivered, %d claimed, %d XNACK, %d XACKDEL", delivered.Load(), claimed.Load(), nacked.Load(), ackdel.Load())
	if nacked.Load() == 0 || ackdel.Load() == 0 || claimed.Load() == 0 {
		t.Fatalf("the consumer exercised too little: %d XNACK, %d XACKDEL, %d claims", nacked.Load(), ackdel.Load(), claimed.Load())
	}

	// 2. Same state on every replica.
	healed := time.Now()
	ref := assertReplicasAgree(t, addrs, 25*time.Second)
	caughtUp := time.Since(healed)
	// The agreed state is the one the consumer produced: nothing it
	// acknowledged or sent to the dead-letter stream is pending, and the
	// dead-letter stream holds exactly the entries it XNACKed FATAL.
	pending := map[string]bool{}
	r, err = setup.call(st, deadline, "XPENDING", r8Key, r8Group, "-", "+", "100000")
	if err != nil {
		t.Fatal(err)
	}
	v, _ = wire.Parse(r)
	pa, _ := v.([]any)
	for _, p := range pa {
		pending[p.([]any)[0].(string)] = true
	}
	for id := range ackedIDs {
		if pending[id] {
			t.Errorf("%s acknowledged by XACKDEL but still pending", id)
		}
	}
	r, err = setup.call(st, deadline, "XRANGE", r8DLQ, "-", "+")
	if err != nil {
		t.Fatal(err)
	}
	v, _ = wire.Parse(r)
	dl, _ := v.([]any)
	inDLQ := map[string]bool{}
	for _, e := range dl {
		_, f, _, err := entryFields(e)
		if err != nil {
			t.Fatal(err)
		}
		src := f["dlq-source-id"]
		if !fatalIDs[src] || inDLQ[src] || f["dlq-group"] != r8Group || src != idOf[atoi(f["iid"])] {
			t.Errorf("unexpected dead-letter entry %v", f)
		}
		inDLQ[src] = true
	}
	for id := range fatalIDs {
		if !inDLQ[id] || pending[id] {
			t.Errorf("%s was XNACKed FATAL: dead-lettered %v, still pending %v", id, inDLQ[id], pending[id])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("final group state: %d pending, %d acknowledged by XACKDEL, %d dead-lettered", len(pending), len(ackedIDs), len(inDLQ))
	if !bytes.Contains(ref, []byte("dlq-source-id")) {
		t.Fatalf("no entry reached the dead-letter stream:\n%s", ref)
	}
	t.Logf("replicas agree %v after the producers finished (%v into the test); %s",
		caughtUp.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), idmpCounters(ref))

	// 3. Restart every node; recovery goes through snapshots.
	var snaps []string
	for _, nd := range nodes {
		s, _ := filepath.Glob(filepath.Join(nd.Dir, "*", "*", "snapshots", "*", "meta.json"))
		if len(s) == 0 {
			s, _ = filepath.Glob(filepath.Join(nd.Dir, "*", "*", "*", "snapshots", "*", "meta.json"))
		}
		if len(s) == 0 {
			t.Fatalf("node %s took no snapshot", nd.Addr)
		}
		snaps = append(snaps, s...)
	}
	for _, nd := range nodes {
		nd.Kill()
	}
	testkit.StartAll(t, nodes...)
	deadline = time.Now().Add(30 * time.Second)
	after := &r8Client{addrs: addrs, cur: addrs[0]}
	defer after.reset()
	old := append([]int{}, resent[:min(len(resent), 10)]...)
	for i := 0; i < r8N; i += 17 {
		old = append(old, i)
	}
	for _, i := range old {
		r, err := after.call(st, deadline, "XADD", r8Key, "IDMP", r8PID, "iid-"+strconv.Itoa(i), "*",
			"iid", strconv.Itoa(i), "amount", "changed")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("$%d\r\n%s\r\n", len(idOf[i]), idOf[i]); string(r) != want {
			t.Errorf("resent iid %d after restart: %q, want its original ID %q", i, r, want)
		}
	}
	if r, err := after.call(st, deadline, "XLEN", r8Key); err != nil || string(r) != fmt.Sprintf(":%d\r\n", r8N) {
		t.Fatalf("XLEN after resending old iids: %q %v", r, err)
	}
	ref2 := assertReplicasAgree(t, addrs, 15*time.Second)
	if !bytes.Equal(stripIdmpCounters(ref), stripIdmpCounters(ref2)) {
		t.Errorf("state changed across the full restart:\nbefore %s\nafter  %s", ref, ref2)
	}
	t.Logf("full restart from %d snapshots: %d old iids resent (%d of them retried during the failover), all answered with their original IDs; total %v",
		len(snaps), len(old), min(len(resent), 10), time.Since(start).Round(time.Millisecond))
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// shardLeader returns the index of the node leading r8Key's shard: the one
// that serves XLEN itself (the others answer MOVED).
func shardLeader(t *testing.T, addrs []string) int {
	t.Helper()
	for attempt := 0; attempt < 100; attempt++ {
		for i, a := range addrs {
			c, err := testkit.Dial(a)
			if err != nil {
				continue
			}
			r, err := c.Do("XLEN", r8Key)
			c.Close()
			if err == nil && r[0] == ':' {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no node leads the shard of %s", r8Key)
	return -1
}

// idmpCounters extracts XINFO STREAM's iids-added and iids-duplicates
// (iids-duplicates > 0: a resend after a lost reply was deduplicated).
func idmpCounters(b []byte) string {
	var out []string
	for _, f := range []string{"iids-added", "iids-duplicates"} {
		k := fmt.Sprintf("$%d\r\n%s\r\n:", len(f), f)
		i := bytes.Index(b, []byte(k))
		if i < 0 {
			out = append(out, f+" missing")
			continue
		}
		v := b[i+len(k):]
		out = append(out, f+" "+string(v[:bytes.IndexByte(v, '\r')]))
	}
	return strings.Join(out, ", ")
}

// stripIdmpCounters masks XINFO STREAM's iids-duplicates value (resending
// old iids after the restart legitimately counts duplicates).
func stripIdmpCounters(b []byte) []byte {
	i := bytes.Index(b, []byte("$15\r\niids-duplicates\r\n:"))
	if i < 0 {
		return b
	}
	j := bytes.Index(b[i+len("$15\r\niids-duplicates\r\n:"):], []byte("\r\n"))
	out := append([]byte{}, b[:i]...)
	return append(out, b[i+len("$15\r\niids-duplicates\r\n:")+j:]...)
}

// firstDiff describes where a and b first differ, with some context.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return "identical"
	}
	// every query's block starts with its command line ("XINFO ...")
	q := bytes.LastIndex(a[:i], []byte("\nX")) + 1
	query := string(a[q:][:max(0, bytes.IndexByte(a[q:], '\n'))])
	lo := max(0, i-80)
	return fmt.Sprintf("in the reply to %q at byte %d: %q vs %q", query, i, a[lo:min(len(a), i+80)], b[lo:min(len(b), i+80)])
}

// maskPendingIdle replaces the idle times of an extended XPENDING reply by
// 0: idle is now minus the delivery time, so it differs between two reads
// at different instants (the delivery times themselves are compared
// through XINFO STREAM FULL).
func maskPendingIdle(t *testing.T, r []byte) []byte {
	t.Helper()
	v, err := wire.Parse(r)
	if err != nil {
		t.Fatalf("XPENDING: %q: %v", r, err)
	}
	a, ok := v.([]any)
	if !ok {
		return r
	}
	args := []string{}
	for _, e := range a {
		p := e.([]any)
		args = append(args, p[0].(string), p[1].(string), "0", strconv.FormatInt(p[3].(int64), 10))
	}
	return []byte(strings.Join(args, " "))
}

// assertReplicasAgree waits (until d) until every node, read with
// READONLY, answers the same state of r8Key and r8DLQ, and returns it.
func assertReplicasAgree(t *testing.T, addrs []string, d time.Duration) []byte {
	t.Helper()
	reads := [][]string{
		{"XINFO", "STREAM", r8Key, "FULL", "COUNT", "0"},
		{"XPENDING", r8Key, r8Group},
		{"XPENDING", r8Key, r8Group, "-", "+", "100000"},
		{"XRANGE", r8Key, "-", "+"},
		{"XRANGE", r8DLQ, "-", "+"},
		{"XINFO", "GROUPS", r8Key},
	}
	return readsAgree(t, addrs, reads, d, func(q []string, r []byte) []byte {
		if q[0] == "XPENDING" && len(q) > 3 {
			return maskPendingIdle(t, r)
		}
		return r
	})
}

// readsAgree waits (until d) until every node, read with READONLY, answers
// reads alike (each reply passed through mask), and returns the answers.
func readsAgree(t *testing.T, addrs []string, reads [][]string, d time.Duration, mask func(q []string, r []byte) []byte) []byte {
	t.Helper()
	snapshot := func(addr string) ([]byte, error) {
		c, err := testkit.Dial(addr)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if r, err := c.Do("READONLY"); err != nil || string(r) != "+OK\r\n" {
			return nil, fmt.Errorf("READONLY: %q %v", r, err)
		}
		var out []byte
		for _, q := range reads {
			r, err := c.Do(q...)
			if err != nil {
				return nil, err
			}
			if r[0] == '-' {
				return nil, fmt.Errorf("%v: %s", q, r)
			}
			r = mask(q, r)
			out = append(out, fmt.Sprintf("%s\n", strings.Join(q, " "))...)
			out = append(out, r...)
			out = append(out, '\n')
		}
		return out, nil
	}
	end := time.Now().Add(d)
	var got [][]byte
	var lastErr error
	for time.Now().Before(end) {
		got, lastErr = got[:0], nil
		for _, a := range addrs {
			s, err := snapshot(a)
			if err != nil {
				lastErr = fmt.Errorf("%s: %v", a, err)
				break
			}
			got = append(got, s)
		}
		if lastErr == nil {
			same := true
			for _, s := range got[1:] {
				same = same && bytes.Equal(s, got[0])
			}
			if same {
				return got[0]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("replicas did not answer within %v: %v", d, lastErr)
	}
	for i, s := range got[1:] {
		t.Logf("node %s vs node %s: %s", addrs[i+1], addrs[0], firstDiff(got[0], s))
	}
	t.Fatalf("replicas still differ after %v", d)
	return nil
}

// TestRedis8BlockingClaimWakes: a client blocked in XREADGROUP ... BLOCK ...
// CLAIM min-idle-time gets a pending entry once it has been idle that long,
// with no write to wake it, as Redis wakes such clients
// (https://redis.io/docs/latest/commands/xreadgroup/: "the CLAIM
// min-idle-time condition may become true for some pending entries during
// the BLOCK milliseconds period").
func TestRedis8BlockingClaimWakes(t *testing.T) {
	rs := startNode(t, "")
	a, b := dial(t, rs.Addr), dial(t, rs.Addr)
	do(t, a, "XADD", "cw", "1-1", "f", "v")
	do(t, a, "XGROUP", "CREATE", "cw", "g", "0")
	if got := do(t, a, "XREADGROUP", "GROUP", "g", "first", "STREAMS", "cw", ">"); !strings.Contains(got, "1-1") {
		t.Fatalf("first read: %q", got)
	}
	start := time.Now()
	if err := b.Send("XREADGROUP", "GROUP", "g", "second", "BLOCK", "30000", "CLAIM", "300", "STREAMS", "cw", ">"); err != nil {
		t.Fatal(err)
	}
	b.SetDeadline(time.Now().Add(40 * time.Second))
	r, err := b.ReadReply()
	if err != nil {
		t.Fatal(err)
	}
	// [[cw [[1-1 [f v] idle 1]]]]: idle >= 300 ms, delivered once before.
	v, err := wire.Parse(r)
	if err != nil {
		t.Fatalf("%q: %v", r, err)
	}
	streams, _ := v.([]any)
	if len(streams) != 1 {
		t.Fatalf("blocked CLAIM read returned %q after %v", r, time.Since(start))
	}
	kv, _ := streams[0].([]any)
	entries, _ := kv[1].([]any)
	if len(entries) != 1 {
		t.Fatalf("blocked CLAIM read returned %q", r)
	}
	id, f, extra, err := entryFields(entries[0])
	if err != nil || id != "1-1" || f["f"] != "v" || len(extra) != 2 {
		t.Fatalf("claimed entry %q (%v)", r, err)
	}
	if idle, _ := extra[0].(int64); idle < 300 {
		t.Fatalf("claimed with idle %d ms < min-idle-time 300", idle)
	}
	if n, _ := extra[1].(int64); n != 1 {
		t.Fatalf("claimed with delivery count %d, want 1", n)
	}
	// Well before the 30 s BLOCK timeout (generous for a loaded machine).
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("claim took %v", d)
	}
	t.Logf("claimed after %v", time.Since(start))
}
