package resp

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// raiseNoFile lifts RLIMIT_NOFILE to want (or the hard limit) and returns
// the soft limit in effect.
func raiseNoFile(t *testing.T, want uint64) uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < want {
		old := rl.Cur
		rl.Cur = min(want, rl.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			rl.Cur = old
		}
		t.Cleanup(func() {
			r := rl
			r.Cur = old
			_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
		})
	}
	return rl.Cur
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestHostileClients throws malformed frames, huge lengths, deep and empty
// arrays, binary junk, half-open connections and thousands of idle
// connections at one server: it stays up, keeps serving a well-behaved
// client, and its memory stays bounded.
func TestHostileClients(t *testing.T) {
	s := New(newFakeBackend(2), Config{ProtoMaxBulkLen: 1 << 20})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.SetLimits(Limits{MaxClients: 20000})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	addr := ln.Addr().String()
	good := dial(t, addr)
	check := func(stage string) {
		t.Helper()
		good.SetDeadline(time.Now().Add(10 * time.Second))
		if got := do(t, good, "XADD", "ok", "*", "f", stage); !strings.HasPrefix(got, "$") {
			t.Fatalf("after %s: well-behaved client got %q", stage, got)
		}
	}
	base := heapInuse()

	hostile := map[string]string{
		"huge multibulk":   "*99999999999\r\n",
		"int overflow":     "*99999999999999999999999\r\n",
		"huge bulk":        "*2\r\n$4\r\nXADD\r\n$9999999999\r\n",
		"bulk over limit":  "*2\r\n$4\r\nPING\r\n$2000000\r\n",
		"negative bulk":    "*1\r\n$-7\r\n",
		"nested arrays":    strings.Repeat("*1\r\n", 10000) + "$4\r\nPING\r\n",
		"empty arrays":     strings.Repeat("*0\r\n", 10000) + "*-1\r\n",
		"binary junk":      "\x00\x01\xff\xfe\r\n\x80*$\r\n\x00",
		"bad bulk header":  "*1\r\n$abc\r\n",
		"missing CRLF":     "*1\r\n$4\r\nPINGPING",
		"unbalanced quote": "SET \"abc\r\n",
		"long inline":      strings.Repeat("A", 200000) + "\r\n",
		"zero-length name": "*1\r\n$0\r\n\r\n",
	}
	for name, payload := range hostile {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte(payload))
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
		c.Close()
		check(name)
	}

	// Half-open: a command cut short and never finished, and a peer that
	// vanishes mid-bulk.
	var halfOpen []net.Conn
	for i := 0; i < 50; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("*3\r\n$4\r\nXADD\r\n$100000\r\nabc"))
		halfOpen = append(halfOpen, c)
	}
	check("half-open")

	// Many idle connections (bounded by RLIMIT_NOFILE: each costs two
	// descriptors here, the client's and the server's).
	limit := raiseNoFile(t, 25000)
	n := 10000
	if avail := int(limit) - 500; 2*n > avail {
		n = avail / 2
	}
	idle := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
		for _, c := range halfOpen {
			c.Close()
		}
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		idle = append(idle, c)
	}
	// Every idle connection is accepted and registered.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.mu.Lock()
		got := len(s.clients)
		s.mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d idle connections registered", got, n)
		}
	}
	check("idle connections")
	perConn := (int64(heapInuse()) - int64(base)) / int64(n)
	t.Logf("%d idle connections in %v; heap %d MB -> %d MB (%d bytes per connection)",
		n, time.Since(start).Round(time.Millisecond), base>>20, heapInuse()>>20, perConn)
	if perConn > 32<<10 {
		t.Errorf("%d bytes of heap per idle connection", perConn)
	}
	if got := do(t, good, "XLEN", "ok"); got != fmt.Sprintf(":%d\r\n", len(hostile)+2) {
		t.Errorf("XLEN: %q", got)
	}
}
