package resp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// Above maxmemory, denyoom commands fail with Redis's -OOM while reads and
// the commands that free memory keep working (differential).
func TestMaxMemoryMatchesRedis(t *testing.T) {
	redisAddr := testkit.StartRedis(t)
	s := New(newFakeBackend(1), Config{})
	ours := serveOn(t, s)
	rc, oc := dial(t, redisAddr), dial(t, ours)
	setup := [][]string{
		{"XADD", "s", "1-1", "f", "v"}, {"XADD", "s", "2-1", "f", "v"}, {"XADD", "s", "3-1", "f", "v"},
		{"XGROUP", "CREATE", "s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">"},
	}
	script := [][]string{
		{"XADD", "s", "4-1", "f", "v"},
		{"XADD", "new", "*", "f", "v"},
		{"SET", "k", "v"},
		{"XGROUP", "CREATE", "s", "g2", "0"},
		{"XLEN", "s"},
		{"XRANGE", "s", "-", "+", "COUNT", "1"},
		{"XACK", "s", "g", "1-1"},
		{"XDEL", "s", "2-1"},
		{"XTRIM", "s", "MAXLEN", "1"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"},
		{"MULTI"}, {"XADD", "s", "5-1", "f", "v"}, {"EXEC"},
		{"DEL", "s"},
	}
	for _, c := range setup {
		do(t, rc, c...)
		do(t, oc, c...)
	}
	do(t, rc, "CONFIG", "SET", "maxmemory", "1")
	s.SetLimits(Limits{MaxMemory: 1})
	for _, c := range script {
		if want, got := do(t, rc, c...), do(t, oc, c...); want != got {
			t.Errorf("%q: redis %q, ours %q", c, want, got)
		}
	}
	// Pipelined writes (the fast path) are refused too.
	for range 3 {
		if err := oc.Send("XADD", "p", "*", "f", "v"); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if got, _ := oc.ReadReply(); string(got) != "-"+errOOM.Msg+"\r\n" {
			t.Errorf("pipelined XADD above maxmemory: %q", got)
		}
	}
}

func TestMaxClients(t *testing.T) {
	s := New(newFakeBackend(1), Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	s.SetLimits(Limits{MaxClients: 2})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	a, b := dial(t, addr), dial(t, addr)
	do(t, a, "PING")
	do(t, b, "PING")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "-ERR max number of clients reached\r\n" {
		t.Errorf("third client: %q", got)
	}
	// A slot frees when a client leaves.
	a.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d, err := testkit.Dial(addr)
		if err == nil {
			r, _ := d.Do("PING")
			d.Close()
			if string(r) == "+PONG\r\n" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no slot after a client closed")
		}
	}
}

func TestIdleTimeoutClosesIdleClients(t *testing.T) {
	s := New(newFakeBackend(1), Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.SetLimits(Limits{IdleTimeout: 300 * time.Millisecond})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	addr := ln.Addr().String()
	busy, idle := dial(t, addr), dial(t, addr)
	do(t, idle, "PING")
	// A blocked client is not idle.
	blocked := dial(t, addr)
	if err := blocked.Send("XREAD", "BLOCK", "900", "STREAMS", "nothing", "$"); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		time.Sleep(100 * time.Millisecond)
		if got := do(t, busy, "PING"); got != "+PONG\r\n" {
			t.Fatalf("busy client: %q", got)
		}
	}
	idle.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.Do("PING"); err == nil {
		t.Error("idle client still connected after the timeout")
	}
	blocked.SetDeadline(time.Now().Add(2 * time.Second))
	if got, err := blocked.ReadReply(); err != nil || string(got) != "*-1\r\n" {
		t.Errorf("blocked client: %q %v", got, err)
	}
}

// A client that asks for a huge reply and stops reading is disconnected
// once its output stalls, and the memory the reply held is released; other
// clients are served meanwhile.
func TestSlowReaderDisconnected(t *testing.T) {
	s := New(newFakeBackend(1), Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.SetLimits(Limits{WriteTimeout: 300 * time.Millisecond})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	addr := ln.Addr().String()
	w := dial(t, addr)
	val := string(bytes.Repeat([]byte("x"), 4096))
	for i := range 2000 { // ~8 MB stream
		if err := w.Send("XADD", "big", strconv.Itoa(i+1)+"-1", "f", val); err != nil {
			t.Fatal(err)
		}
	}
	for range 2000 {
		if _, err := w.ReadReply(); err != nil {
			t.Fatal(err)
		}
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if tc, ok := slow.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	for range 4 {
		if _, err := slow.Write(testkit.EncodeCommand("XRANGE", "big", "-", "+")); err != nil {
			t.Fatal(err)
		}
	}
	// Others are served while the slow reader's output is stuck.
	time.Sleep(200 * time.Millisecond)
	if got := do(t, w, "XLEN", "big"); got != ":2000\r\n" {
		t.Errorf("other client: %q", got)
	}
	// The slow client is dropped (it leaves CLIENT LIST without having read
	// anything; building the replies may take seconds on a loaded machine);
	// draining what was sent then ends in EOF/reset.
	for deadline := time.Now().Add(60 * time.Second); strings.Count(do(t, w, "CLIENT", "LIST"), "id=") > 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow reader is still connected after 60s")
		}
	}
	_ = slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, slow)
	var ne net.Error
	if n >= 4*2000*4096 || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("slow reader not disconnected: got %d bytes, %v", n, err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("slow reader got %d bytes before disconnect (%v); heap in use %d MB before, %d MB after", n, err, before>>20, ms.HeapInuse>>20)
	if ms.HeapInuse > before+64<<20 {
		t.Errorf("heap grew from %d to %d MB after the slow reader was dropped", before>>20, ms.HeapInuse>>20)
	}
}

// deadlineCounter is a connection that counts write-deadline moves.
type deadlineCounter struct {
	net.Conn
	moves int
	last  time.Time
}

func (c *deadlineCounter) SetWriteDeadline(t time.Time) error { c.moves++; c.last = t; return nil }
func (c *deadlineCounter) Write(p []byte) (int, error)        { return len(p), nil }

// TestWriteDeadlineMovedRarely: each reply written bounds the write by
// the write timeout, but the socket's deadline (a timer update) moves only
// when it is within 1/8 of the timeout of the one set, not per reply.
func TestWriteDeadlineMovedRarely(t *testing.T) {
	dc := &deadlineCounter{}
	const timeout = 10 * time.Second
	lim := &connLimits{}
	lim.write.Store(int64(timeout))
	c := &limitConn{Conn: dc, lim: lim}
	for range 1000 {
		start := time.Now()
		if _, err := c.Write([]byte("+OK\r\n")); err != nil {
			t.Fatal(err)
		}
		if left := dc.last.Sub(start); left < timeout*7/8 {
			t.Fatalf("a write got %v before its deadline, want at least %v", left, timeout*7/8)
		}
	}
	if dc.moves != 1 {
		t.Fatalf("deadline moved %d times over 1000 quick writes, want once", dc.moves)
	}
	// Later, once less than 7/8 of the timeout is left, it moves again.
	c.wdl.Add(-int64(timeout / 4))
	if _, err := c.Write([]byte("+OK\r\n")); err != nil {
		t.Fatal(err)
	}
	if dc.moves != 2 {
		t.Fatalf("deadline moved %d times, want 2 once it had come close", dc.moves)
	}
}
