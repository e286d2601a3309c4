//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
)

// The event loop (RAFTSTREAM_EVENT_LOOP=on, resp/loop_linux.go): plain
// connections that send only writes are served by one goroutine, and leave
// it for a goroutine of their own when they need anything else.

// startLoopNode starts a node with the event loop on, and checks that the
// loop reads and writes through io_uring unless RAFTSTREAM_IO_URING is off
// or this host refuses io_uring.
func startLoopNode(t *testing.T, extra ...string) *testkit.Node {
	t.Helper()
	t.Setenv(eventLoopEnv, "on")
	n := startNode(t, "", extra...)
	want := int64(0)
	if os.Getenv(ioURingEnv) != "off" && hostIOURing() {
		want = 1
	}
	if got := infoField(t, n.Addr, "clients", "event_loop_io_uring"); got != want {
		t.Fatalf("event_loop_io_uring %d with %s=%q, want %d", got, ioURingEnv, os.Getenv(ioURingEnv), want)
	}
	return n
}

// hostIOURing reports whether this host lets a process set up an io_uring.
func hostIOURing() bool {
	var params [120]byte // struct io_uring_params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		return false
	}
	unix.Close(int(fd))
	return true
}

// loopIO runs fn once for each way the loop can read and write: a round's
// reads, and its writes, in one io_uring call each (the default), and a
// system call per connection (RAFTSTREAM_IO_URING=off).
func loopIO(t *testing.T, fn func(t *testing.T)) {
	for _, m := range []struct{ name, env string }{{"io_uring", ""}, {"syscalls", "off"}} {
		t.Run(m.name, func(t *testing.T) {
			t.Setenv(ioURingEnv, m.env)
			fn(t)
		})
	}
}

// dialTCP opens a plain socket to addr, closed at cleanup: for writing
// commands in pieces and pipelines of one's own making.
func dialTCP(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// TestEventLoopDiff: writes served by the loop, one at a time and
// pipelined, errors included, then reads and other commands on the same
// connections (which leave the loop mid-pipeline), byte for byte against
// redis-server.
func TestEventLoopDiff(t *testing.T) { loopIO(t, testEventLoopDiff) }

func testEventLoopDiff(t *testing.T) {
	rs := startLoopNode(t)
	redis := testkit.StartRedis(t)
	// One write at a time on a connection that sends nothing else.
	runDiff(t, rs.Addr, redis, script(
		"XADD s 1-1 a 1",
		"XADD s 1-1 a 2",
		"XADD s 2-0 b 2 c 3",
		"XADD s * a",
		"SET k v",
		"XADD k 1-1 a 1",
		"XADD s MAXLEN 2 3-0 d 4",
		"XDEL s 2-0 9-9",
		"XTRIM s MAXLEN 1",
	))
	if n := infoField(t, rs.Addr, "clients", "event_loop_rounds"); n < 5 {
		t.Fatalf("event_loop_rounds %d after the writes: the loop did not serve them", n)
	}
	// Pipelined writes with errors among them, on a connection that stays
	// in the loop.
	var cmds [][]string
	for i := 1; i <= 300; i++ {
		cmds = append(cmds, []string{"XADD", "p", fmt.Sprintf("%d-0", i), "n", strconv.Itoa(i)})
		if i%37 == 0 {
			cmds = append(cmds, []string{"XADD", "p", "1-0", "dup", "1"}, []string{"XADD", "k", "*", "a", "1"})
		}
	}
	handoffs := infoField(t, rs.Addr, "clients", "event_loop_handoffs")
	if got, want := pipeline(t, rs.Addr, cmds...), pipeline(t, redis, cmds...); got != want {
		t.Fatalf("pipelined writes differ:\n raftstream: %.400q\n redis:      %.400q", got, want)
	}
	// The same with reads among the writes: the connection leaves the
	// loop at its first read, with the writes before it answered in order.
	cmds = cmds[:0]
	for i := 1; i <= 60; i++ {
		cmds = append(cmds, []string{"XADD", "q", fmt.Sprintf("%d-0", i), "n", strconv.Itoa(i)})
		if i%3 == 0 {
			cmds = append(cmds, []string{"XLEN", "q"}, []string{"XREVRANGE", "q", "+", "-", "COUNT", "1"})
		}
	}
	if got, want := pipeline(t, rs.Addr, cmds...), pipeline(t, redis, cmds...); got != want {
		t.Fatalf("pipelined writes and reads differ:\n raftstream: %.400q\n redis:      %.400q", got, want)
	}
	if n := infoField(t, rs.Addr, "clients", "event_loop_handoffs"); n <= handoffs {
		t.Fatalf("event_loop_handoffs %d, was %d: the connection with reads stayed in the loop", n, handoffs)
	}
	runDiff(t, rs.Addr, redis, script(
		"XRANGE s - +",
		"XRANGE p - + COUNT 5",
		"XLEN p",
		"XLEN q",
		"TYPE k",
	))
}

// TestEventLoopRejoin: a connection that began with a command the loop
// does not serve (CLIENT SETNAME, go-redis's HELLO) goes back to the loop
// once its goroutine has served eight write pipelines in a row, leaves it
// again at a read, and comes back; its replies match redis-server's
// throughout.
func TestEventLoopRejoin(t *testing.T) {
	rs := startLoopNode(t)
	a, b := dial(t, rs.Addr), dial(t, testkit.StartRedis(t))
	step := func(cmd ...string) {
		t.Helper()
		if got, want := do(t, a, cmd...), do(t, b, cmd...); got != want {
			t.Fatalf("%q:\n raftstream: %q\n redis:      %q", strings.Join(cmd, " "), got, want)
		}
	}
	inLoop := func(want int64, when string) {
		t.Helper()
		if n := infoField(t, rs.Addr, "clients", "event_loop_clients"); n != want {
			t.Fatalf("event_loop_clients %d %s, want %d", n, when, want)
		}
	}
	step("CLIENT", "SETNAME", "w")
	inLoop(0, "after CLIENT SETNAME")
	id := 0
	writes := func(n int) {
		t.Helper()
		for range n {
			id++
			step("XADD", "s", fmt.Sprintf("%d-1", id), "f", strconv.Itoa(id))
			if id%5 == 0 {
				step("XADD", "s", "1-1", "dup", "x") // an error reply, from the loop too
			}
		}
	}
	writes(6) // 7 pipelines: XADD 5 is followed by a duplicate
	inLoop(0, "after 7 write pipelines")
	writes(1)
	inLoop(1, "after 8 write pipelines in a row")
	step("XLEN", "s")
	inLoop(0, "after a read")
	writes(12)
	inLoop(1, "after 12 more writes")
	step("XRANGE", "s", "-", "+")
	inLoop(0, "after XRANGE")

	// go-redis begins with HELLO and CLIENT SETINFO; its writes then go
	// through the loop too.
	rounds := infoField(t, rs.Addr, "clients", "event_loop_rounds")
	c := redis.NewClient(&redis.Options{Addr: rs.Addr, PoolSize: 1})
	defer c.Close()
	for i := 1; i <= 20; i++ {
		if id, err := c.XAdd(t.Context(), &redis.XAddArgs{Stream: "g", ID: fmt.Sprintf("%d-1", i), Values: []string{"n", strconv.Itoa(i)}}).Result(); err != nil || id != fmt.Sprintf("%d-1", i) {
			t.Fatalf("go-redis XADD %d: %q, %v", i, id, err)
		}
	}
	inLoop(1, "after go-redis's 20 writes")
	if n := infoField(t, rs.Addr, "clients", "event_loop_rounds"); n < rounds+10 {
		t.Fatalf("event_loop_rounds %d, was %d: go-redis's writes did not go through the loop", n, rounds)
	}
	if n, err := c.XLen(t.Context(), "g").Result(); err != nil || n != 20 {
		t.Fatalf("go-redis XLEN: %d, %v", n, err)
	}
}

// TestEventLoopOutputBufferLimit: the replies the loop writes count out of
// the connection's output buffer as they reach the socket, as the goroutine
// path's do. With a hard limit of 16 KiB for normal clients, a client that
// reads each reply keeps its connection through far more than 16 KiB of
// replies, served by the loop.
func TestEventLoopOutputBufferLimit(t *testing.T) { loopIO(t, testEventLoopOutputBufferLimit) }

func testEventLoopOutputBufferLimit(t *testing.T) {
	rs := startLoopNode(t)
	if got := do(t, dial(t, rs.Addr), "CONFIG", "SET", "client-output-buffer-limit", "normal 16384 0 0"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	rounds := infoField(t, rs.Addr, "clients", "event_loop_rounds")
	c := dialTCP(t, rs.Addr)
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(c)
	const n = 3000 // about 40 KiB of replies
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%d-1", i)
		if _, err := c.Write(wire.AppendCommand(nil, []string{"XADD", "obuf", id, "f", "v"})); err != nil {
			t.Fatalf("XADD %d: %v", i, err)
		}
		got, err := wire.ReadReply(br)
		if err != nil || string(got) != fmt.Sprintf("$%d\r\n%s\r\n", len(id), id) {
			t.Fatalf("reply %d: %q, %v", i, got, err)
		}
	}
	if r := infoField(t, rs.Addr, "clients", "event_loop_rounds"); r < rounds+n/2 {
		t.Fatalf("event_loop_rounds %d, was %d: the writes did not go through the loop", r, rounds)
	}
}

// TestEventLoopPartialCommand: a command that arrives in pieces leaves the
// loop (which never waits on a client) and is answered whole.
func TestEventLoopPartialCommand(t *testing.T) { loopIO(t, testEventLoopPartialCommand) }

func testEventLoopPartialCommand(t *testing.T) {
	rs := startLoopNode(t)
	c := dialTCP(t, rs.Addr)
	cmd := testkit.EncodeCommand("XADD", "s", "5-1", "f", "v")
	br := bufio.NewReader(c)
	for _, part := range [][]byte{cmd[:9], cmd[9:20], cmd[20:]} {
		if _, err := c.Write(part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := wire.ReadReply(br)
	if err != nil || string(got) != "$3\r\n5-1\r\n" {
		t.Fatalf("reply %q, %v; want the ID", got, err)
	}
	// Another client is served meanwhile and afterwards.
	if got, err := dial(t, rs.Addr).Do("XADD", "s", "6-1", "f", "v"); err != nil || string(got) != "$3\r\n6-1\r\n" {
		t.Fatalf("second client: %q, %v", got, err)
	}
}

// TestEventLoopSlowReaderDoesNotStall: a client that pipelines writes and
// does not read its replies fills its socket; the loop hands it to a
// goroutine instead of waiting, and keeps serving the others. The slow
// client gets every reply once it reads.
func TestEventLoopSlowReaderDoesNotStall(t *testing.T) {
	loopIO(t, testEventLoopSlowReaderDoesNotStall)
}

func testEventLoopSlowReaderDoesNotStall(t *testing.T) {
	rs := startLoopNode(t)
	c := dialTCP(t, rs.Addr)
	_ = c.SetReadBuffer(4096) // no receive-window growth
	const n = 50000
	var buf []byte
	for i := 1; i <= n; i++ {
		buf = wire.AppendCommand(buf, []string{"XADD", "slow", fmt.Sprintf("%d-1", i), "field", "value"})
	}
	werr := make(chan error, 1)
	go func() { _, err := c.Write(buf); werr <- err }()
	time.Sleep(500 * time.Millisecond)
	other := dial(t, rs.Addr)
	other.SetDeadline(time.Now().Add(3 * time.Second))
	start := time.Now()
	if got, err := other.Do("XADD", "fast", "1-1", "f", "v"); err != nil || string(got) != "$3\r\n1-1\r\n" {
		t.Fatalf("another client while one does not read: %q, %v (after %v)", got, err, time.Since(start))
	}
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(c)
	for i := 1; i <= n; i++ {
		got, err := wire.ReadReply(br)
		if want := fmt.Sprintf("%d-1", i); err != nil || string(got) != fmt.Sprintf("$%d\r\n%s\r\n", len(want), want) {
			t.Fatalf("reply %d: %q, %v", i, got, err)
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if h := infoField(t, rs.Addr, "clients", "event_loop_handoffs"); h < 1 {
		t.Fatalf("event_loop_handoffs %d: the slow client was never handed over", h)
	}
}

// TestEventLoopKillAndIdleTimeout: a loop connection killed by another
// client is closed and counted out; with an idle timeout set at run time,
// an idle loop connection is closed like any other.
func TestEventLoopKillAndIdleTimeout(t *testing.T) {
	rs := startLoopNode(t)
	a := dialTCP(t, rs.Addr)
	ar := bufio.NewReader(a)
	xadd := func() ([]byte, error) {
		_ = a.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := a.Write(testkit.EncodeCommand("XADD", "s", "*", "f", "v")); err != nil {
			return nil, err
		}
		return wire.ReadReply(ar)
	}
	if _, err := xadd(); err != nil {
		t.Fatal(err)
	}
	if n := infoField(t, rs.Addr, "clients", "event_loop_clients"); n != 1 {
		t.Fatalf("event_loop_clients %d with one writing client, want 1", n)
	}
	b := dial(t, rs.Addr)
	if got, err := b.Do("CLIENT", "KILL", a.LocalAddr().String()); err != nil || string(got) != "+OK\r\n" {
		t.Fatalf("CLIENT KILL %s: %q, %v", a.LocalAddr(), got, err)
	}
	if got, err := xadd(); err == nil {
		t.Fatalf("killed client still served: %q", got)
	}
	waitClients := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := infoField(t, rs.Addr, "clients", "connected_clients")
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("connected_clients %d, want %d", n, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitClients(2) // b and infoField's own
	if n := infoField(t, rs.Addr, "clients", "event_loop_clients"); n != 0 {
		t.Fatalf("event_loop_clients %d after the kill, want 0", n)
	}

	// An idle timeout set at run time reaches the loop's connections.
	c := dial(t, rs.Addr)
	if _, err := c.Do("XADD", "s", "*", "f", "v"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Do("CONFIG", "SET", "timeout", "1"); err != nil || string(got) != "+OK\r\n" {
		t.Fatalf("CONFIG SET timeout: %q, %v", got, err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := c.ReadReply(); err == nil {
		t.Fatalf("idle loop connection got %q instead of being closed", got)
	}
}

// TestEventLoopShutdownKeepsAcknowledgedWrites: SIGTERM while loop clients
// pipeline writes; every write acknowledged before the connections close
// is in the stream after a restart, and the node exits cleanly.
func TestEventLoopShutdownKeepsAcknowledgedWrites(t *testing.T) {
	rs := startLoopNode(t)
	const clients, perClient = 4, 3000
	acked := make(chan []string, clients)
	for k := range clients {
		c := dialTCP(t, rs.Addr)
		go func() {
			var ok []string
			defer func() { acked <- ok }()
			br := bufio.NewReader(c)
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			for i := 1; i <= perClient; i += 10 {
				var buf []byte
				var ids []string
				for j := i; j < i+10; j++ {
					id := fmt.Sprintf("%d-%d", j, k)
					ids = append(ids, id)
					buf = wire.AppendCommand(buf, []string{"XADD", "down", id, "f", "v"})
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
				for _, id := range ids {
					got, err := wire.ReadReply(br)
					if err != nil {
						return
					}
					if string(got) == fmt.Sprintf("$%d\r\n%s\r\n", len(id), id) {
						ok = append(ok, id)
					}
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if err := rs.Stop(stopTimeout); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	var all []string
	for range clients {
		all = append(all, <-acked...)
	}
	if len(all) == 0 {
		t.Fatal("no write was acknowledged before the shutdown")
	}
	rs.Start()
	c := dial(t, rs.Addr)
	have := map[string]bool{}
	reply, err := c.Do("XRANGE", "down", "-", "+")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range strings.Split(string(reply), "\r\n") {
		have[id] = true
	}
	for _, id := range all {
		if !have[id] {
			t.Fatalf("acknowledged %s is not in the stream after the restart (%d acknowledged)", id, len(all))
		}
	}
	t.Logf("%d writes acknowledged before SIGTERM, all present after the restart", len(all))
}
