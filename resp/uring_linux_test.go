package resp

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair returns the two ends of a loopback TCP connection, closed at
// cleanup.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// ringOp runs one op on each of conns' sockets through u (each) and
// returns the results.
func ringOp(t *testing.T, u *uring, opcode uint8, conns []*conn, bufs [][]byte) []int32 {
	t.Helper()
	res := make([]int32, len(conns))
	if err := u.each(opcode, conns, func(i int) []byte { return bufs[i] }, res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestURing: the event loop's ring receives and sends on many sockets in
// one call, with a plain non-blocking read's and write's outcomes: what
// was there, EAGAIN when nothing was (or no room was left), 0 at EOF, a
// partial send; a socket closed before the call is not touched.
func TestURing(t *testing.T) {
	u, err := newURing()
	if err != nil {
		t.Skipf("io_uring refused on this host (%v): the loop makes a system call per read and write", err)
	}
	defer u.close()
	const n = 5
	var servers []*conn
	var clients []*net.TCPConn
	for range n {
		cl, sv := tcpPair(t)
		c := &conn{nc: sv}
		if c.lw = newLoopWriter(c); c.lw == nil {
			t.Fatal("no loop writer for a TCP connection")
		}
		servers, clients = append(servers, c), append(clients, cl)
	}
	bufs := func(size int) [][]byte {
		b := make([][]byte, n)
		for i := range b {
			b[i] = make([]byte, size)
		}
		return b
	}

	// Nothing sent yet: every receive finds nothing.
	for i, r := range ringOp(t, u, uringOpRecv, servers, bufs(64)) {
		if r != -int32(unix.EAGAIN) {
			t.Fatalf("receive %d on an empty socket: %d, want -EAGAIN", i, r)
		}
	}
	// Each client sends its own bytes; one receive each takes them.
	for i, cl := range clients {
		if _, err := cl.Write([]byte{'a' + byte(i), '\n'}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	in := bufs(64)
	for i, r := range ringOp(t, u, uringOpRecv, servers, in) {
		if want := []byte{'a' + byte(i), '\n'}; r != 2 || !bytes.Equal(in[i][:2], want) {
			t.Fatalf("receive %d: %d %q, want %q", i, r, in[i][:max(r, 0)], want)
		}
	}
	// One send each reaches its own client.
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte{'A' + byte(i), '\r', '\n'}
	}
	for i, r := range ringOp(t, u, uringOpSend, servers, out) {
		if r != 3 {
			t.Fatalf("send %d: %d, want 3", i, r)
		}
	}
	for i, cl := range clients {
		got := make([]byte, 3)
		_ = cl.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(cl, got); err != nil || !bytes.Equal(got, out[i]) {
			t.Fatalf("client %d got %q, %v; want %q", i, got, err, out[i])
		}
	}
	// A client that reads nothing: the sends fill its socket, then one is
	// partial or finds no room (EAGAIN), never waiting.
	_ = clients[0].SetReadBuffer(4096)
	big := [][]byte{bytes.Repeat([]byte("x"), 1<<20)}
	total, full := 0, false
	for range 64 {
		r := ringOp(t, u, uringOpSend, servers[:1], big)[0]
		if r == -int32(unix.EAGAIN) || (r >= 0 && int(r) < len(big[0])) {
			full = true
			break
		}
		if r < 0 {
			t.Fatalf("send to a full socket: %d", r)
		}
		total += int(r)
	}
	if !full {
		t.Fatalf("64 MiB sent to a client that reads nothing without a short send (%d bytes)", total)
	}
	// EOF: the client closed its end.
	clients[1].Close()
	time.Sleep(50 * time.Millisecond)
	if r := ringOp(t, u, uringOpRecv, servers[1:2], bufs(64)[:1])[0]; r != 0 {
		t.Fatalf("receive after the peer closed: %d, want 0 (EOF)", r)
	}
	// A socket closed before the call is left out; the others still run.
	servers[2].nc.Close()
	if _, err := clients[3].Write([]byte("z")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	res := ringOp(t, u, uringOpRecv, servers[2:4], bufs(64)[:2])
	if res[0] != closedRes || res[1] != 1 {
		t.Fatalf("receives on a closed socket and a live one: %v, want [closed 1]", res)
	}
}
