package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/fsm/nodelog"
	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/command"
	"github.com/raftstream/raftstream/slots"
)

// fakeBackend is a test Backend: one engine per shard under a mutex, units
// applied synchronously. failWith makes every Submit and Read of a shard
// fail with an error (to exercise the error mapping).
type fakeBackend struct {
	mu       sync.Mutex
	engines  []*engine.Engine
	slotMap  *slots.Map
	notify   func(int, []string)
	failWith map[int]error
	top      cluster.Topology
	// applied counts each shard's applied units: the log index the fake
	// reports for a unit. waited is the last WaitReplicas question.
	applied []uint64
	waited  struct {
		shard int
		index uint64
	}
	reads atomic.Int64 // Read calls
	// check, if set, is every shard's checker (slot moves, asking_test.go);
	// moving maps a slot in a move to its [from, to] shards.
	check  func(shard int, argv [][]byte, asking bool) engine.Reply
	moving map[int][2]int
	// addShards lets AddShard add shards (asking_test.go).
	addShards bool
}

func newFakeBackend(shards int) *fakeBackend {
	b := &fakeBackend{slotMap: slots.NewMap(shards), failWith: map[int]error{}}
	b.top.MyID = strings.Repeat("a", 40)
	b.top.Nodes = []cluster.NodeInfo{
		{ID: strings.Repeat("a", 40), Host: "127.0.0.1", Port: 7001, Bus: 17001, Up: true},
		{ID: strings.Repeat("b", 40), Host: "127.0.0.1", Port: 7002, Bus: 17002, Up: true},
	}
	for i := 0; i < shards; i++ {
		b.engines = append(b.engines, engine.New(engine.DefaultConfig()))
		b.applied = append(b.applied, 0)
		b.top.Shards = append(b.top.Shards, cluster.ShardInfo{Slots: b.slotMap.RangesOf(i),
			Leader: b.top.MyID, Replicas: []string{b.top.MyID}})
	}
	b.top.Slots = b.slotMap.Runs()
	return b
}

func (b *fakeBackend) NumShards() int           { return len(b.engines) }
func (b *fakeBackend) ShardOfSlot(slot int) int { return b.slotMap.Shard(slot) }

func (b *fakeBackend) Submit(shard int, unit fsm.Unit) *fsm.Future {
	b.mu.Lock()
	if err := b.failWith[shard]; err != nil {
		b.mu.Unlock()
		return fsm.FailedFuture(err)
	}
	now := time.Now().UnixMilli()
	var out []engine.Reply
	proposed := false
	for _, argv := range unit {
		if e := engine.Validate(now, argv); e != nil {
			out = append(out, e)
			continue
		}
		proposed = true
		out = append(out, b.engines[shard].Exec(now, argv))
	}
	keys := b.engines[shard].TakeSignaled()
	notify := b.notify
	var index uint64 // 0, as fsm reports, when nothing was proposed
	if proposed {
		b.applied[shard]++
		index = b.applied[shard]
	}
	b.mu.Unlock()
	if notify != nil && len(keys) > 0 {
		notify(shard, keys)
	}
	return fsm.AppliedFuture(out, index)
}

func (b *fakeBackend) Read(ctx context.Context, shard int, stale bool, fn func(e *engine.Engine)) error {
	b.reads.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.failWith[shard]; err != nil {
		return err
	}
	fn(b.engines[shard])
	return nil
}

// Backup takes the shard's engine view at the fake's applied count.
func (b *fakeBackend) Backup(ctx context.Context, shard int) (*fsm.Backup, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.failWith[shard]; err != nil {
		return nil, err
	}
	return &fsm.Backup{Index: b.applied[shard], Term: 1, Now: time.Now().UnixMilli(), Engine: b.engines[shard].Snapshot()}, nil
}

func (b *fakeBackend) SetNotify(f func(int, []string)) { b.notify = f }
func (b *fakeBackend) Topology() cluster.Topology {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.top
}
func (b *fakeBackend) ShardStatus(shard int) (cluster.ShardStatus, bool) {
	return cluster.ShardStatus{Role: "leader", Term: 1, Leader: b.top.MyID}, shard < len(b.engines)
}
func (b *fakeBackend) ShardStats(shard int) (fsm.Stats, bool) {
	return fsm.Stats{}, shard < len(b.engines)
}
func (b *fakeBackend) NodeLogStats() nodelog.Stats { return nodelog.Stats{} }
func (b *fakeBackend) CoLocated() int              { return 1 }

// The fake has no Raft: leadership, snapshots and membership changes fail.
var errFakeNoRaft = errors.New("the test backend has no Raft")

func (b *fakeBackend) TransferLeader(context.Context, int, string) error { return errFakeNoRaft }
func (b *fakeBackend) SnapshotShard(int) error                           { return errFakeNoRaft }
func (b *fakeBackend) RemoveNode(context.Context, string) error          { return errFakeNoRaft }

func (b *fakeBackend) BusStats() cluster.BusStats { return cluster.BusStats{} }

// WaitReplicas: the fake's shards have no other replicas, so none ever
// acknowledges; a caller wanting some waits out ctx, as a standalone
// Redis makes WAIT wait out its timeout.
func (b *fakeBackend) WaitReplicas(ctx context.Context, shard int, index uint64, want int) (int, bool) {
	if shard >= len(b.engines) {
		return 0, false
	}
	b.mu.Lock()
	b.waited.shard, b.waited.index = shard, index
	b.mu.Unlock()
	if want > 0 {
		<-ctx.Done()
	}
	return 0, true
}

func (b *fakeBackend) fail(shard int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failWith[shard] = err
}

// startServer serves be on a loopback port until the test ends.
func startServer(t *testing.T, be Backend, cfg Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(be, cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) *testkit.Conn {
	t.Helper()
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t *testing.T, c *testkit.Conn, args ...string) string {
	t.Helper()
	r, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(r)
}

// TestErrorMapping: every backend failure gets its client error, in one
// place (mapError).
func TestErrorMapping(t *testing.T) {
	be := newFakeBackend(1)
	addr := startServer(t, be, DefaultConfig())
	c := dial(t, addr)
	slot := slots.Of([]byte("k"))
	cases := []struct {
		err  error
		want string
		read string // the reply to a read, if not want
	}{
		{&fsm.NotLeaderError{LeaderID: strings.Repeat("b", 40), LeaderAddr: "127.0.0.1:17002"}, fmt.Sprintf("-MOVED %d 127.0.0.1:7002\r\n", slot), ""},
		{&fsm.NotLeaderError{}, "-TRYAGAIN the shard has no leader (election in progress), retry later\r\n", ""},
		{fmt.Errorf("wrapped: %w", fsm.ErrUnknownOutcome), "-UNKNOWN the write's outcome is unknown: it may have been applied\r\n", readTryAgain},
		{context.DeadlineExceeded, "-UNKNOWN the write's outcome is unknown: it may have been applied\r\n", readTryAgain},
		{fsm.ErrBusy, "-TRYAGAIN the shard is busy, retry later\r\n", ""},
		{fmt.Errorf("x: %w", ErrNoQuorum), "-CLUSTERDOWN The cluster is down\r\n", ""},
		{fsm.ErrShutdown, "-ERR the shard is shutting down, retry on another node\r\n", ""},
	}
	for _, tc := range cases {
		be.fail(0, tc.err)
		if got := do(t, c, "XADD", "k", "*", "f", "v"); got != tc.want {
			t.Errorf("write failing with %v: %q, want %q", tc.err, got, tc.want)
		}
		want := tc.want
		if tc.read != "" {
			want = tc.read
		}
		if got := do(t, c, "XLEN", "k"); got != want {
			t.Errorf("read failing with %v: %q, want %q", tc.err, got, want)
		}
	}
	be.fail(0, nil)
	if got := do(t, c, "XADD", "k", "1-1", "f", "v"); got != "$3\r\n1-1\r\n" {
		t.Fatalf("XADD after recovery: %q", got)
	}
	if !errors.Is(fmt.Errorf("x: %w", ErrNoQuorum), ErrNoQuorum) {
		t.Fatal("ErrNoQuorum must wrap")
	}
}

const readTryAgain = "-TRYAGAIN the read could not confirm the shard's leader (leader change or timeout), retry later\r\n"

// TestReadCutOffByLeaderChangeIsTryAgain: a read whose leadership check
// was cut off (the fence's outcome unknown, or the deadline passed) has no
// effect, so it answers a retryable TRYAGAIN, never UNKNOWN, on every read
// path: a single read, a pipeline of reads, an EXEC of reads, and XREAD
// resolving "$". A write failing the same way still answers UNKNOWN.
func TestReadCutOffByLeaderChangeIsTryAgain(t *testing.T) {
	be := newFakeBackend(1)
	addr := startServer(t, be, DefaultConfig())
	c := dial(t, addr)
	if got := do(t, c, "XADD", "k", "1-1", "f", "v"); got != "$3\r\n1-1\r\n" {
		t.Fatalf("XADD: %q", got)
	}
	for _, cut := range []error{
		fmt.Errorf("%w: %v", fsm.ErrUnknownOutcome, "leadership lost while committing log"),
		context.DeadlineExceeded,
	} {
		be.fail(0, cut)
		if got := do(t, c, "XLEN", "k"); got != readTryAgain {
			t.Errorf("%v: XLEN = %q, want %q", cut, got, readTryAgain)
		}
		if got := do(t, c, "XRANGE", "k", "-", "+"); got != readTryAgain {
			t.Errorf("%v: XRANGE = %q, want %q", cut, got, readTryAgain)
		}
		// A pipeline of reads.
		for i := 0; i < 3; i++ {
			if err := c.Send("XLEN", "k"); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 3; i++ {
			r, err := c.ReadReply()
			if err != nil {
				t.Fatal(err)
			}
			if string(r) != readTryAgain {
				t.Errorf("%v: pipelined XLEN %d = %q, want %q", cut, i, r, readTryAgain)
			}
		}
		// An EXEC of reads.
		if got := do(t, c, "MULTI"); got != "+OK\r\n" {
			t.Fatalf("MULTI: %q", got)
		}
		do(t, c, "XLEN", "k")
		do(t, c, "XRANGE", "k", "-", "+")
		if got := do(t, c, "EXEC"); !strings.Contains(got, "-TRYAGAIN the read could not confirm") || strings.Contains(got, "UNKNOWN") {
			t.Errorf("%v: EXEC of reads = %q, want the read TRYAGAIN", cut, got)
		}
		// XREAD with "$" reads the last ID first.
		if got := do(t, c, "XREAD", "BLOCK", "10", "STREAMS", "k", "$"); got != readTryAgain {
			t.Errorf("%v: XREAD $ = %q, want %q", cut, got, readTryAgain)
		}
		// A write that fails the same way may have been applied.
		if got := do(t, c, "XADD", "k", "*", "f", "v"); !strings.HasPrefix(got, "-UNKNOWN") {
			t.Errorf("%v: XADD = %q, want UNKNOWN", cut, got)
		}
	}
	be.fail(0, nil)
	if got := do(t, c, "XLEN", "k"); got != ":1\r\n" {
		t.Fatalf("XLEN after recovery: %q", got)
	}
}

func TestUnknownCommandAndArityMatchRedis(t *testing.T) {
	addr := startServer(t, newFakeBackend(1), DefaultConfig())
	redis := testkit.StartRedis(t)
	long := strings.Repeat("x", 200)
	for _, cmd := range [][]string{
		{"NOSUCH"},
		{"nosuch", "a", "b", "c"},
		{"NoSuch", long, "b"},
		{"nosuch", strings.Repeat("y", 100), strings.Repeat("z", 100)},
		{"XADD", "s"},
		{"xlen"},
		{"XGROUP"},
		{"XGROUP", "CREATE", "s"},
		{"xinfo", "nosuch", "s"},
		{"CONFIG", "GET"},
		{"CLIENT", "SETNAME"},
		{"PING", "a", "b"},
		{"GET", "a", "b"},
	} {
		a, b := dial(t, addr), dial(t, redis)
		if got, want := do(t, a, cmd...), do(t, b, cmd...); got != want {
			t.Errorf("%.60v:\n got  %q\n want %q", cmd, got, want)
		}
	}
}

func TestOversizedArgumentClosesConnection(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ProtoMaxBulkLen = 16
	be := newFakeBackend(1)
	addr := startServer(t, be, cfg)
	c := dial(t, addr)
	if got := do(t, c, "XADD", "k", "1-1", "f", strings.Repeat("v", 17)); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("oversized argument: %q", got)
	}
	if _, err := c.Do("PING"); err == nil {
		t.Fatal("connection still open")
	}
	c2 := dial(t, addr)
	if got := do(t, c2, "EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("oversized command was applied: %q", got)
	}
}

// TestProtocolErrorsMatchRedis sends the same raw byte streams, valid
// commands followed by malformed or oversized frames, to redis-server and
// to the server, and compares everything each answers until it closes the
// connection: the commands before a bad frame run, and the error is
// Redis's, byte for byte.
func TestProtocolErrorsMatchRedis(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ProtoMaxBulkLen = 1 << 20 // Redis's smallest proto-max-bulk-len
	addr := startServer(t, newFakeBackend(1), cfg)
	redis := testkit.StartRedis(t, "--proto-max-bulk-len", "1mb")
	ping := "*1\r\n$4\r\nPING\r\n"
	for _, in := range []string{
		ping + "*2147483648\r\n",
		ping + "*9223372036854775808\r\n",
		ping + "*2\r\n$4\r\nECHO\r\n$1048577\r\n",
		ping + "*1\r\n$-1\r\n",
		ping + "*1\r\n$abc\r\n",
		ping + "*abc\r\n",
		ping + "*1\r\nx\r\n",
		ping + "*+1\r\n$4\r\nPING\r\n",
		ping + "*1\r\n$04\r\nPING\r\n",
		ping + "*01\r\n$4\r\nPING\r\n",
		"*0\r\n*-1\r\n*-7\r\n" + ping,
		ping + "*2\r\n$4\r\nECHO\r\n$1048576\r\n" + strings.Repeat("x", 1<<20) + "\r\n" + ping,
	} {
		got, want := rawExchange(t, addr, in), rawExchange(t, redis, in)
		if got != want {
			t.Errorf("%.80q:\n got  %.200q\n want %.200q", in, got, want)
		}
	}
}

// rawExchange writes in to addr, half-closes, and returns all it answers.
func rawExchange(t *testing.T, addr, in string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		_, _ = c.Write([]byte(in))
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	out, _ := io.ReadAll(c)
	return string(out)
}

func TestClusterCommands(t *testing.T) {
	be := newFakeBackend(2)
	be.top.Shards[1].Leader = strings.Repeat("b", 40)
	be.top.Shards[1].Replicas = []string{strings.Repeat("a", 40), strings.Repeat("b", 40)}
	cfg := DefaultConfig()
	cfg.ClusterMode = true
	addr := startServer(t, be, cfg)
	c := dial(t, addr)
	if got := do(t, c, "CLUSTER", "KEYSLOT", "foo"); got != ":12182\r\n" {
		t.Errorf("KEYSLOT foo: %q", got)
	}
	if got := do(t, c, "CLUSTER", "KEYSLOT", "{user1000}.following"); got != ":3443\r\n" {
		t.Errorf("KEYSLOT hash tag: %q", got)
	}
	if got := do(t, c, "CLUSTER", "MYID"); got != "$40\r\n"+strings.Repeat("a", 40)+"\r\n" {
		t.Errorf("MYID: %q", got)
	}
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	wantSlots := "*2\r\n" +
		"*3\r\n:0\r\n:8191\r\n*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$40\r\n" + a + "\r\n*0\r\n" +
		"*4\r\n:8192\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:7002\r\n$40\r\n" + b + "\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$40\r\n" + a + "\r\n*0\r\n"
	if got := do(t, c, "CLUSTER", "SLOTS"); got != wantSlots {
		t.Errorf("SLOTS:\n got  %q\n want %q", got, wantSlots)
	}
	nodes := do(t, c, "CLUSTER", "NODES")
	for _, want := range []string{a + " 127.0.0.1:7001@17001 myself,master - 0 0 0 connected 0-8191\n",
		b + " 127.0.0.1:7002@17002 master - 0 0 0 connected 8192-16383\n"} {
		if !strings.Contains(nodes, want) {
			t.Errorf("NODES %q lacks %q", nodes, want)
		}
	}
	if info := do(t, c, "CLUSTER", "INFO"); !strings.Contains(info, "cluster_state:ok\r\n") || !strings.Contains(info, "cluster_slots_ok:16384\r\n") {
		t.Errorf("INFO: %q", info)
	}
	do(t, c, "XADD", "foo", "1-1", "f", "v")
	if got := do(t, c, "CLUSTER", "COUNTKEYSINSLOT", "12182"); got != ":1\r\n" {
		t.Errorf("COUNTKEYSINSLOT: %q", got)
	}
	if got := do(t, c, "CLUSTER", "GETKEYSINSLOT", "12182", "10"); got != "*1\r\n$3\r\nfoo\r\n" {
		t.Errorf("GETKEYSINSLOT: %q", got)
	}
	if got := do(t, c, "READONLY"); got != "+OK\r\n" {
		t.Errorf("READONLY: %q", got)
	}
	if got := do(t, c, "HELLO", "3"); !strings.Contains(got, "$4\r\nmode\r\n$7\r\ncluster\r\n") {
		t.Errorf("HELLO in cluster mode: %q", got)
	}
}

func TestCommandTable(t *testing.T) {
	addr := startServer(t, newFakeBackend(1), DefaultConfig())
	redis := testkit.StartRedis(t)
	c, r := dial(t, addr), dial(t, redis)
	// The table's arity, flags, key positions and categories match Redis 7
	// for the stream commands (first six fields of COMMAND INFO and the
	// categories; key specs and tips are compared separately by shape).
	for _, name := range []string{"xadd", "xrange", "xrevrange", "xlen", "xack", "xpending", "xclaim", "xautoclaim", "xdel", "xtrim", "xsetid", "del", "exists", "type", "get", "set", "rename", "renamenx", "ping", "echo", "multi", "exec",
		"expire", "pexpire", "expireat", "pexpireat", "ttl", "pttl", "expiretime", "pexpiretime", "persist", "getex"} {
		got, want := commandInfoHead(do(t, c, "COMMAND", "INFO", name)), commandInfoHead(do(t, r, "COMMAND", "INFO", name))
		if got != want {
			t.Errorf("COMMAND INFO %s:\n got  %q\n want %q", name, got, want)
		}
	}
	for _, cmd := range [][]string{
		{"COMMAND", "GETKEYS", "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s1", "s2", ">", ">"},
		{"COMMAND", "GETKEYS", "RENAME", "a", "b"},
		{"COMMAND", "GETKEYS", "DEL", "a", "b", "c"},
		{"COMMAND", "GETKEYS", "XGROUP", "CREATE", "s", "g", "$"},
		{"COMMAND", "GETKEYS", "PING", "x"},
		{"COMMAND", "INFO", "xgroup|create"},
	} {
		got, want := do(t, c, cmd...), do(t, r, cmd...)
		if strings.HasPrefix(want, "*1\r\n*10\r\n") {
			got, want = commandInfoHead(got), commandInfoHead(want)
		}
		if got != want {
			t.Errorf("%v:\n got  %q\n want %q", cmd, got, want)
		}
	}
	if got := do(t, c, "COMMAND", "COUNT"); got != fmt.Sprintf(":%d\r\n", len(command.Top())) {
		t.Errorf("COMMAND COUNT: %q", got)
	}
	if got := do(t, c, "COMMAND", "LIST", "FILTERBY", "PATTERN", "xre*"); got != "*4\r\n$5\r\nxread\r\n$10\r\nxreadgroup\r\n$9\r\nxrevrange\r\n" && got != "*3\r\n$5\r\nxread\r\n$10\r\nxreadgroup\r\n$9\r\nxrevrange\r\n" {
		t.Errorf("COMMAND LIST FILTERBY PATTERN: %q", got)
	}
	if got := do(t, c, "COMMAND", "DOCS", "xlen"); !strings.Contains(got, "$5\r\nsince\r\n$5\r\n5.0.0\r\n") {
		t.Errorf("COMMAND DOCS xlen: %q", got)
	}
}

// commandInfoHead keeps the first seven fields of a one-command COMMAND INFO
// reply: name, arity, flags, first, last, step, categories.
func commandInfoHead(raw string) string {
	lines := strings.Split(raw, "\r\n")
	var out []string
	fields := 0
	i := 2 // skip "*1", "*10"
	for i < len(lines) && fields < 7 {
		l := lines[i]
		switch l[0] {
		case '$':
			out = append(out, lines[i+1])
			i += 2
		case ':':
			out = append(out, l)
			i++
		case '*', '~':
			var n int
			fmt.Sscan(l[1:], &n)
			out = append(out, strings.Join(lines[i+1:i+1+n], ","))
			i += 1 + n
		default:
			out = append(out, l)
			i++
		}
		fields++
	}
	return strings.Join(out, " | ")
}

// TestClientListWhileOthersRun: CLIENT LIST reads other connections' state
// while they change it (run with -race).
func TestClientListWhileOthersRun(t *testing.T) {
	addr := startServer(t, newFakeBackend(1), DefaultConfig())
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		c := dial(t, addr)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; n < 50; n++ {
				c.Do("HELLO", fmt.Sprint(2+n%2))
				c.Do("MULTI")
				c.Do("XADD", fmt.Sprint("k", i), "*", "f", "v")
				c.Do("EXEC")
				c.Do("CLIENT", "SETNAME", fmt.Sprint("c", n))
			}
		}(i)
	}
	l := dial(t, addr)
	for n := 0; n < 50; n++ {
		if got := do(t, l, "CLIENT", "LIST"); !strings.Contains(got, "cmd=client|list") {
			t.Fatalf("CLIENT LIST: %q", got)
		}
	}
	wg.Wait()
}

// unitRecorder is a fakeBackend that records the length of every submitted
// unit, in order.
type unitRecorder struct {
	*fakeBackend
	umu   sync.Mutex
	units []int
}

func (b *unitRecorder) Submit(shard int, unit fsm.Unit) *fsm.Future {
	b.umu.Lock()
	b.units = append(b.units, len(unit))
	b.umu.Unlock()
	return b.fakeBackend.Submit(shard, unit)
}

func (b *unitRecorder) taken() []int {
	b.umu.Lock()
	defer b.umu.Unlock()
	out := append([]int(nil), b.units...)
	b.units = nil
	return out
}

// TestPipelinedWritesShareAUnitPerShardRun: a pipeline's consecutive writes
// to one shard are submitted as one unit; a write to another shard or a read
// ends the run; a command that fails inside a run gets its own error while
// the others apply; and a long run is cut at maxRunCommands.
func TestPipelinedWritesShareAUnitPerShardRun(t *testing.T) {
	be := &unitRecorder{fakeBackend: newFakeBackend(2)}
	addr := startServer(t, be, DefaultConfig())
	c := dial(t, addr)
	var a, b string // keys on shard 0 and shard 1
	for i := 0; a == "" || b == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if be.ShardOfSlot(slotOf([]byte(k))) == 0 {
			a = k
		} else {
			b = k
		}
	}
	var pipe []byte
	for _, cmd := range [][]string{
		{"XADD", a, "1-1", "f", "v"},
		{"XADD", a, "1-1", "f", "v"}, // fails in the engine: ID not above the top
		{"XADD", a, "1-2", "f", "v"},
		{"XADD", b, "1-1", "f", "v"},
		{"XLEN", a},
		{"XADD", a, "1-3", "f", "v"},
	} {
		pipe = append(pipe, testkit.EncodeCommand(cmd...)...)
	}
	if err := c.WriteRaw(pipe); err != nil {
		t.Fatal(err)
	}
	want := []string{"$3\r\n1-1\r\n", "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n",
		"$3\r\n1-2\r\n", "$3\r\n1-1\r\n", ":2\r\n", "$3\r\n1-3\r\n"}
	for i, w := range want {
		r, err := c.ReadReply()
		if err != nil || string(r) != w {
			t.Fatalf("reply %d: %q %v, want %q", i, r, err, w)
		}
	}
	if got := be.taken(); fmt.Sprint(got) != "[3 1 1]" {
		t.Fatalf("units submitted %v, want [3 1 1] (a's run, b's run, a's write after the read)", got)
	}

	// A long run: every unit at most maxRunCommands, all applied in order.
	const n = maxRunCommands + 44
	pipe = pipe[:0]
	for i := 0; i < n; i++ {
		pipe = append(pipe, testkit.EncodeCommand("XADD", b, fmt.Sprintf("2-%d", i+1), "f", "v")...)
	}
	if err := c.WriteRaw(pipe); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r, err := c.ReadReply()
		if w := fmt.Sprintf("2-%d", i+1); err != nil || string(r) != fmt.Sprintf("$%d\r\n%s\r\n", len(w), w) {
			t.Fatalf("long run reply %d: %q %v", i, r, err)
		}
	}
	units, total, most := be.taken(), 0, 0
	for _, u := range units {
		total += u
		most = max(most, u)
	}
	if total != n || most > maxRunCommands || most < 2 {
		t.Fatalf("long run went in units %v: total %d (want %d), largest %d (want 2..%d)", units, total, n, most, maxRunCommands)
	}
}

// hangingBackend never answers a submitted unit (a proposal whose entry
// never commits).
type hangingBackend struct{ *fakeBackend }

func (b hangingBackend) Submit(int, fsm.Unit) *fsm.Future { return new(fsm.Future) }

// TestPipelinedWriteTimeoutIsUnknownOutcome: pipelined writes that are not
// answered within WriteTimeout get the unknown-outcome error, in order, and
// the connection's timer works again for the next pipeline.
func TestPipelinedWriteTimeoutIsUnknownOutcome(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WriteTimeout = 200 * time.Millisecond
	addr := startServer(t, hangingBackend{newFakeBackend(1)}, cfg)
	c := dial(t, addr)
	want := string(AppendReply(nil, errUnknownOutcome, 2))
	for round := 0; round < 2; round++ {
		var pipe []byte
		for i := 0; i < 3; i++ {
			pipe = append(pipe, testkit.EncodeCommand("XADD", "s", "*", "f", "v")...)
		}
		pipe = append(pipe, testkit.EncodeCommand("PING")...)
		start := time.Now()
		if err := c.WriteRaw(pipe); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			r, err := c.ReadReply()
			if err != nil || string(r) != want {
				t.Fatalf("round %d reply %d: %q %v, want %q", round, i, r, err, want)
			}
		}
		if r, err := c.ReadReply(); err != nil || string(r) != "+PONG\r\n" {
			t.Fatalf("round %d PING: %q %v", round, r, err)
		}
		if d := time.Since(start); d < cfg.WriteTimeout {
			t.Fatalf("round %d answered after %v, before WriteTimeout %v", round, d, cfg.WriteTimeout)
		}
	}
}

// TestLeaderlessReplicaRedirects: a replica that has heard from no leader
// for a while sends clients only to a node that fresh reports name as the
// shard's leader (a node cut off from the others, who elected one), so
// that a cluster client reloads its slot map instead of asking it again;
// with no such report (the shard lost its quorum) it answers CLUSTERDOWN,
// never MOVED to another replica that could send the client back; within
// an ordinary election it answers TRYAGAIN; and CLUSTER SLOTS lists it
// last for a shard whose leader it does not know.
func TestLeaderlessReplicaRedirects(t *testing.T) {
	be := newFakeBackend(1)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	be.mu.Lock()
	be.top.Shards[0].Replicas = []string{a, b}
	be.top.Shards[0].Leader = ""
	be.mu.Unlock()
	addr := startServer(t, be, DefaultConfig())
	c := dial(t, addr)
	slot := slots.Of([]byte("k"))
	down := "-CLUSTERDOWN Hash slot not served: its shard has no leader (no quorum of its replicas is reachable)\r\n"
	tryAgain := "-TRYAGAIN the shard has no leader (election in progress), retry later\r\n"
	for _, tc := range []struct {
		leader string // the shard's leader in Topology (fresh reports)
		err    error
		want   string
	}{
		{"", &fsm.NotLeaderError{LeaderlessFor: 10 * time.Second}, down},
		{b, &fsm.NotLeaderError{LeaderlessFor: 10 * time.Second}, fmt.Sprintf("-MOVED %d 127.0.0.1:7002\r\n", slot)},
		{a, &fsm.NotLeaderError{LeaderlessFor: 10 * time.Second}, down},
		{"", &fsm.NotLeaderError{LeaderlessFor: time.Second}, tryAgain},
		{b, &fsm.NotLeaderError{LeaderlessFor: time.Second}, tryAgain},
		{"", &fsm.NotLeaderError{}, tryAgain},
	} {
		be.mu.Lock()
		be.top.Shards[0].Leader = tc.leader
		be.mu.Unlock()
		be.fail(0, tc.err)
		if got := do(t, c, "XADD", "k", "*", "f", "v"); got != tc.want {
			t.Errorf("leader %.4s, write failing with %+v: %q, want %q", tc.leader, tc.err, got, tc.want)
		}
	}
	// A reported leader that is down: CLUSTERDOWN, not MOVED to it.
	be.mu.Lock()
	be.top.Shards[0].Leader = b
	be.top.Nodes[1].Up = false
	be.mu.Unlock()
	be.fail(0, &fsm.NotLeaderError{LeaderlessFor: 10 * time.Second})
	if got := do(t, c, "XADD", "k", "*", "f", "v"); got != down {
		t.Errorf("leader reported down: %q, want CLUSTERDOWN", got)
	}
	be.mu.Lock()
	be.top.Shards[0].Leader = ""
	be.top.Nodes[1].Up = true
	be.mu.Unlock()
	// CLUSTER SLOTS: b before this node (a), though a's ID sorts first.
	if got := do(t, c, "CLUSTER", "SLOTS"); strings.Index(got, "7002") > strings.Index(got, "7001") {
		t.Errorf("CLUSTER SLOTS lists this leaderless node first: %q", got)
	}
}
