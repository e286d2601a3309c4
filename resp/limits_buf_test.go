package resp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/admin"
)

// infoStat reads one integer field of INFO stats.
func infoStat(t *testing.T, c *testkit.Conn, field string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + field + `:(\d+)\r$`).FindStringSubmatch(do(t, c, "INFO", "stats"))
	if m == nil {
		t.Fatalf("INFO stats has no %s", field)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// waitStat polls INFO stats until field reaches want (60s at most).
func waitStat(t *testing.T, c *testkit.Conn, field string, want int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := infoStat(t, c, field)
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d after 60s, want %d", field, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heapPeak samples the heap every few milliseconds until stopped and
// returns the largest value seen.
func heapPeak() (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if h := heapBytes(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() int64 { close(done); wg.Wait(); return peak.Load() }
}

// fillBig writes n entries of a 1 KiB value to stream key.
func fillBig(t *testing.T, c *testkit.Conn, key string, n int) {
	t.Helper()
	val := strings.Repeat("x", 1024)
	for i := range n {
		if err := c.Send("XADD", key, strconv.Itoa(i+1)+"-1", "f", val); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if r, err := c.ReadReply(); err != nil || r[0] != '$' {
			t.Fatalf("XADD: %q %v", r, err)
		}
	}
}

// stalledReader connects, shrinks its receive buffer, sends cmds and never
// reads.
func stalledReader(t *testing.T, addr string, cmds ...[]string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	var b []byte
	for _, cmd := range cmds {
		b = append(b, testkit.EncodeCommand(cmd...)...)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return c
}

// drained reads what the server sent until EOF or reset; it fails the test
// if the connection is still open after 10s.
func drained(t *testing.T, c net.Conn) int64 {
	t.Helper()
	return int64(len(drainedBytes(t, c, io.Discard)))
}

// drainedBytes is drained keeping the first bytes read in keep.
func drainedBytes(t *testing.T, c net.Conn, keep io.Writer) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var head bytes.Buffer
	n, err := io.Copy(io.MultiWriter(keep, &limitedBuffer{&head, 1 << 10}), c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after 10s (%d bytes read)", n)
	}
	out := head.Bytes()
	if n > int64(len(out)) {
		out = append(out, make([]byte, n-int64(len(out)))...)
	}
	return out
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func clientCount(t *testing.T, c *testkit.Conn) int {
	t.Helper()
	return strings.Count(do(t, c, "CLIENT", "LIST"), "id=")
}

// client-output-buffer-limit normal <hard> <soft> <secs>, hard limit: a
// client that pipelines many large XRANGEs and reads nothing is closed once
// its pending replies pass the hard limit. The server's heap stays near the
// limit instead of holding every reply (150 x ~2.2 MB here), the dropped
// client gets less than the limit, and the other clients are served.
func TestOutputBufferHardLimitDropsStalledPipeline(t *testing.T) {
	be := newFakeBackend(1)
	s := New(be, Config{})
	addr := serveOn(t, s)
	other := dial(t, addr)
	if got := do(t, other, "CONFIG", "GET", "client-output-buffer-limit"); got !=
		"*2\r\n$26\r\nclient-output-buffer-limit\r\n$85\r\nnormal 1073741824 268435456 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60\r\n" {
		t.Errorf("default: %q", got)
	}
	fillBig(t, other, "big", 2000)
	reply := len(do(t, other, "XRANGE", "big", "-", "+"))
	if got := do(t, other, "CONFIG", "SET", "client-output-buffer-limit", "normal 8mb 0 0"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	if got := do(t, other, "CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(got, "normal 8388608 0 0 slave") {
		t.Errorf("after SET: %q", got)
	}
	runtime.GC()
	base := heapBytes()
	stop := heapPeak()
	const pipelined = 150
	cmds := make([][]string, pipelined)
	for i := range cmds {
		cmds[i] = []string{"XRANGE", "big", "-", "+"}
	}
	slow := stalledReader(t, addr, cmds...)
	waitStat(t, other, "client_output_buffer_limit_disconnections", 1)
	if got := do(t, other, "XLEN", "big"); got != ":2000\r\n" {
		t.Errorf("other client: %q", got)
	}
	got := drained(t, slow)
	peak := stop()
	t.Logf("reply %d bytes x %d pipelined; dropped client received %d bytes; heap %d MB before, peak %d MB",
		reply, pipelined, got, base>>20, peak>>20)
	if got >= 8<<20+int64(reply) {
		t.Errorf("the dropped client received %d bytes, more than the 8 MB limit", got)
	}
	if peak-base > 96<<20 {
		t.Errorf("heap grew by %d MB with an 8 MB output limit (unbounded would hold %d MB)", (peak-base)>>20, pipelined*reply>>20)
	}
	for deadline := time.Now().Add(10 * time.Second); clientCount(t, other) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("CLIENT LIST still shows the dropped client:\n%s", do(t, other, "CLIENT", "LIST"))
		}
	}
	// A client that reads its replies is not cut off by the limit, however
	// much it asks for in total.
	for range 8 {
		if r := do(t, other, "XRANGE", "big", "-", "+"); len(r) != reply {
			t.Fatalf("reading client: reply of %d bytes, want %d", len(r), reply)
		}
	}
	if n := infoStat(t, other, "client_output_buffer_limit_disconnections"); n != 1 {
		t.Errorf("disconnections = %d, want 1", n)
	}
	sc := admin.NewScrape()
	s.CollectMetrics(sc)
	var metrics strings.Builder
	sc.WriteTo(&metrics)
	if body := metrics.String(); !strings.Contains(body, `raftstream_client_buffer_limit_disconnections_total{buffer="output"} 1`+"\n") {
		t.Errorf("/metrics has no output-buffer disconnection:\n%s", body)
	}
}

// Soft limit: output pending above <soft> for <secs> seconds closes the
// connection; the hard limit is off here.
func TestOutputBufferSoftLimitDropsStalledReader(t *testing.T) {
	s := New(newFakeBackend(1), Config{})
	addr := serveOn(t, s)
	other := dial(t, addr)
	fillBig(t, other, "big", 2000)
	if got := do(t, other, "CONFIG", "SET", "client-output-buffer-limit", "normal 0 1mb 1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	// ~18 MB of replies: more than the kernel's socket buffers take, so
	// megabytes stay pending in the server while nothing is read.
	cmds := make([][]string, 8)
	for i := range cmds {
		cmds[i] = []string{"XRANGE", "big", "-", "+"}
	}
	start := time.Now()
	slow := stalledReader(t, addr, cmds...)
	waitStat(t, other, "client_output_buffer_limit_disconnections", 1)
	took := time.Since(start)
	if took < 900*time.Millisecond {
		t.Errorf("dropped after %v, before the soft limit's 1s", took)
	}
	drained(t, slow)
	t.Logf("stalled reader dropped %v after its request", took)
	if got := do(t, other, "PING"); got != "+PONG\r\n" {
		t.Errorf("other client: %q", got)
	}
}

// Errors and units of CONFIG SET client-output-buffer-limit and
// client-query-buffer-limit match Redis's (differential).
func TestBufferLimitConfigMatchesRedis(t *testing.T) {
	redisAddr := testkit.StartRedis(t)
	s := New(newFakeBackend(1), Config{})
	rc, oc := dial(t, redisAddr), dial(t, serveOn(t, s))
	for _, c := range [][]string{
		{"CONFIG", "GET", "client-query-buffer-limit"},
		{"CONFIG", "SET", "client-query-buffer-limit", "1000"},
		{"CONFIG", "SET", "client-query-buffer-limit", "abc"},
		{"CONFIG", "SET", "client-query-buffer-limit", "2MB"},
		{"CONFIG", "GET", "client-query-buffer-limit"},
		{"CONFIG", "SET", "client-output-buffer-limit", "normal 8mb 0"},
		{"CONFIG", "SET", "client-output-buffer-limit", "x 1 1 1"},
		{"CONFIG", "SET", "client-output-buffer-limit", "normal 1 x 1"},
		{"CONFIG", "SET", "client-output-buffer-limit", "normal 1 1 -1"},
		{"CONFIG", "SET", "client-output-buffer-limit", "normal 1k 2K 3 replica 1mb 2mb 3"},
		{"CONFIG", "GET", "client-output-buffer-limit"},
		{"CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"},
		{"CONFIG", "GET", "client-output-buffer-limit"},
	} {
		if want, got := do(t, rc, c...), do(t, oc, c...); want != got {
			t.Errorf("%q: redis %q, ours %q", c, want, got)
		}
	}
}

// endlessCommand sends the start of a command that never ends: a multibulk
// announcing a million arguments (or, inline, a line without a newline),
// then up to max bytes more, until the server closes the connection. It
// returns how many bytes were written.
func endlessCommand(t *testing.T, addr string, inline bool, max int) (net.Conn, int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	chunk := []byte("$1024\r\n" + strings.Repeat("a", 1024) + "\r\n")
	head := []byte("*1000000\r\n")
	if inline {
		chunk = bytes.Repeat([]byte("a "), 512)
		head = []byte("XADD ")
	}
	pre := testkit.EncodeCommand("XADD", "pre", "*", "f", "v")
	sent, err := c.Write(append(pre, head...))
	for err == nil && sent < max {
		var n int
		n, err = c.Write(chunk)
		sent += n
	}
	return c, sent
}

// client-query-buffer-limit: a client whose unfinished command grows past
// the limit (a multibulk that never ends, or an inline line without a
// newline) is closed without a reply, its earlier complete commands still
// run, a command just under the limit is served, the server's heap does not
// follow what the client sends, and other clients are served throughout.
func TestQueryBufferLimitClosesEndlessCommand(t *testing.T) {
	s := New(newFakeBackend(1), Config{})
	addr := serveOn(t, s)
	other := dial(t, addr)
	if got := do(t, other, "CONFIG", "GET", "client-query-buffer-limit"); got != "*2\r\n$25\r\nclient-query-buffer-limit\r\n$10\r\n1073741824\r\n" {
		t.Errorf("default: %q", got)
	}
	if got := do(t, other, "CONFIG", "SET", "client-query-buffer-limit", "1mb"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	// Just under the limit: served.
	big := strings.Repeat("v", 900<<10)
	if got := do(t, other, "XADD", "s", "1-1", "f", big); got != "$3\r\n1-1\r\n" {
		t.Fatalf("XADD of 900 KB: %q", got[:min(len(got), 80)])
	}

	runtime.GC()
	base := heapBytes()
	stop := heapPeak()
	for i, tc := range []struct {
		name   string
		inline bool
	}{{"multibulk", false}, {"inline", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// A complete command first, in the same write: it runs before
			// the connection is dropped.
			c, sent := endlessCommand(t, addr, tc.inline, 64<<20)
			got := drainedBytes(t, c, io.Discard)
			t.Logf("closed after the client wrote %d KB; reply %q", sent>>10, got)
			if sent >= 64<<20 {
				t.Errorf("accepted 64 MB of one unfinished command")
			}
			if !regexp.MustCompile(`^\$\d+\r\n\d+-\d+\r\n$`).Match(got) {
				t.Errorf("read %q: want the reply to the complete command only", got)
			}
			waitStat(t, other, "client_query_buffer_limit_disconnections", int64(i+1))
			if got := do(t, other, "XLEN", "s"); got != ":1\r\n" {
				t.Errorf("other client: %q", got)
			}
		})
	}
	if peak := stop(); peak-base > 64<<20 {
		t.Errorf("heap grew by %d MB while clients sent endless commands against a 1 MB limit", (peak-base)>>20)
	}
	if got := do(t, other, "XLEN", "pre"); got != ":2\r\n" {
		t.Errorf("the complete commands sent first: XLEN pre %q, want 2", got)
	}
}
