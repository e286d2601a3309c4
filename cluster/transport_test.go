package cluster

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func newTestMux(t testing.TB) *Mux {
	t.Helper()
	m, err := Listen("127.0.0.1:0", "127.0.0.1:0", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// echoOnce accepts one connection on l and echoes one line prefixed by tag.
func echoOnce(t *testing.T, l *StreamLayer, tag string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			ch <- err
			return
		}
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			ch <- err
			return
		}
		_, err = io.WriteString(c, tag+line)
		ch <- err
	}()
	return ch
}

func TestMuxRoutesTwoGroupsOnOnePort(t *testing.T) {
	m := newTestMux(t)
	a, b := m.Layer(ShardGroup(0)), m.Layer(ControllerGroup)
	if a.Addr().String() != b.Addr().String() {
		t.Fatalf("layers on different addresses: %s %s", a.Addr(), b.Addr())
	}
	doneA, doneB := echoOnce(t, a, "A:"), echoOnce(t, b, "B:")
	// Dial b first so routing cannot depend on order.
	for _, tc := range []struct {
		l    *StreamLayer
		want string
	}{{b, "B:hi\n"}, {a, "A:hi\n"}} {
		c, err := tc.l.Dial(raft.ServerAddress("127.0.0.1:"+portOf(m.Addr())), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "hi\n"); err != nil {
			t.Fatal(err)
		}
		got, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || got != tc.want {
			t.Fatalf("reply %q, %v; want %q", got, err, tc.want)
		}
	}
	for _, ch := range []<-chan error{doneA, doneB} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}

func portOf(a net.Addr) string { _, p, _ := net.SplitHostPort(a.String()); return p }

func TestClosedLayerAcceptErrors(t *testing.T) {
	m := newTestMux(t)
	l := m.Layer("g")
	res := make(chan error, 1)
	go func() { _, err := l.Accept(); res <- err }()
	l.Close()
	select {
	case err := <-res:
		if !errors.Is(err, ErrLayerClosed) {
			t.Fatalf("Accept after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not return after Close")
	}
	if _, err := l.Accept(); !errors.Is(err, ErrLayerClosed) {
		t.Fatalf("second Accept = %v", err)
	}
	// The name is free again and a closed mux fails Accept too.
	l2 := m.Layer("g")
	m.Close()
	if _, err := l2.Accept(); !errors.Is(err, ErrLayerClosed) {
		t.Fatalf("Accept after mux Close = %v", err)
	}
}

func TestMuxDropsUnknownGroupAndSilentPeers(t *testing.T) {
	m, err := Listen("127.0.0.1:0", "127.0.0.1:0", 200*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l := m.Layer("known")
	done := echoOnce(t, l, "K:")
	addr := m.Addr().String()

	// A silent peer is dropped after the preamble deadline, and does not
	// block routing of another connection meanwhile.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	unknown, err := m.Dial(addr, "nope", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unknown.Close()
	unknown.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := unknown.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection to unknown group not closed")
	}
	c, err := m.Dial(addr, "known", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "x\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := bufio.NewReader(c).ReadString('\n'); got != "K:x\n" {
		t.Fatalf("got %q %v", got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("silent connection not closed")
	}
	// Bad magic is dropped.
	bad, _ := net.Dial("tcp", addr)
	defer bad.Close()
	bad.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	bad.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bad.Read(make([]byte, 1)); err == nil {
		t.Fatal("bad preamble not closed")
	}
}

// TestAdvertisedHostNameKept: a bus advertised by host name keeps the name
// (it is resolved per dial, so a peer whose name moves to a new IP stays
// reachable) and a raft address with that name dials through the mux.
func TestAdvertisedHostNameKept(t *testing.T) {
	m, err := Listen("127.0.0.1:0", "localhost:0", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	addr := m.Addr().String()
	if host, _, _ := net.SplitHostPort(addr); host != "localhost" || portOf(m.Addr()) == "0" {
		t.Fatalf("advertised %q, want localhost:<bound port>", addr)
	}
	l := m.Layer(ShardGroup(0))
	done := echoOnce(t, l, "A:")
	c, err := l.Dial(raft.ServerAddress(addr), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "hi\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != "A:hi\n" {
		t.Fatalf("reply %q, %v", got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("127.0.0.1:0", "localhost:x", time.Second, nil); err == nil {
		t.Fatal("a bad advertised port was accepted")
	}
}
