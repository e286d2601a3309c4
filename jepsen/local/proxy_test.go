package local

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// echoServer is a real TCP echo server on loopback; it stops at cleanup.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := NewProxy("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads len(msg) bytes back within d.
func roundTrip(c net.Conn, msg []byte, d time.Duration) ([]byte, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	got := make([]byte, len(msg))
	_, err := io.ReadFull(c, got)
	return got, err
}

// dialAndTrip dials addr and makes one round trip; the reset of a proxy
// may already fail the dial.
func dialAndTrip(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = roundTrip(c, []byte("y"), 2*time.Second)
	return err
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

func TestPassLargeConcurrent(t *testing.T) {
	p := newProxy(t, echoServer(t))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := make([]byte, 1<<20)
			_, _ = rand.Read(msg)
			// write and read concurrently: 1 MiB does not fit in socket buffers
			go func() { _, _ = c.Write(msg) }()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, msg) {
				errs <- errors.New("bytes changed in transit")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestDelay(t *testing.T) {
	p := newProxy(t, echoServer(t))
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("warm"), time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Delay, 100*time.Millisecond)
	start := time.Now()
	got, err := roundTrip(c, []byte("hello"), 3*time.Second)
	rtt := time.Since(start)
	if err != nil || string(got) != "hello" {
		t.Fatalf("got %q, %v", got, err)
	}
	// both directions are delayed
	if rtt < 200*time.Millisecond || rtt > 2*time.Second {
		t.Fatalf("round trip %v, want about 200ms", rtt)
	}
	p.Set(Pass, 0)
	start = time.Now()
	if _, err := roundTrip(c, []byte("fast"), time.Second); err != nil || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("after pass: %v in %v", err, time.Since(start))
	}
}

func TestStallHoldsThenReleasesInOrder(t *testing.T) {
	p := newProxy(t, echoServer(t))
	c := dial(t, p.Addr())
	p.Set(Stall, 0)
	for _, s := range []string{"one ", "two ", "three"} {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if n, err := c.Read(make([]byte, 16)); !isTimeout(err) {
		t.Fatalf("stalled link delivered %d bytes, err %v", n, err)
	}
	p.Set(Pass, 0)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := make([]byte, len("one two three"))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "one two three" {
		t.Fatalf("after heal got %q, %v", got, err)
	}
}

func TestBlackholeDropsThenResets(t *testing.T) {
	p := newProxy(t, echoServer(t))
	c := dial(t, p.Addr())
	p.Set(Blackhole, 0)
	if _, err := c.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if n, err := c.Read(make([]byte, 16)); !isTimeout(err) {
		t.Fatalf("blackholed link delivered %d bytes, err %v", n, err)
	}
	p.Set(Pass, 0)
	// the connection that lost bytes is reset, never resumed with a hole
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c.Read(make([]byte, 16)); err == nil || isTimeout(err) {
		t.Fatalf("connection survived a blackhole: read %d, %v", n, err)
	}
	c2 := dial(t, p.Addr())
	if got, err := roundTrip(c2, []byte("again"), time.Second); err != nil || string(got) != "again" {
		t.Fatalf("new connection after heal: %q, %v", got, err)
	}
}

func TestResetExistingAndNew(t *testing.T) {
	p := newProxy(t, echoServer(t))
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("x"), time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Reset, 0)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("existing connection not reset: %v", err)
	}
	if err := dialAndTrip(p.Addr()); err == nil || isTimeout(err) { // accepted, then reset at once
		t.Fatalf("new connection not reset: %v", err)
	}
	p.Set(Pass, 0)
	c3 := dial(t, p.Addr())
	if got, err := roundTrip(c3, []byte("z"), time.Second); err != nil || string(got) != "z" {
		t.Fatalf("after pass: %q, %v", got, err)
	}
}

func TestTargetDownRefusesClient(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	p := newProxy(t, addr)
	if err := dialAndTrip(p.Addr()); err == nil || isTimeout(err) {
		t.Fatalf("connection to a dead target stayed open: %v", err)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	var cs []net.Conn
	for i := 0; i < 4; i++ {
		c := dial(t, p.Addr())
		if _, err := roundTrip(c, []byte("k"), time.Second); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	p.Set(Stall, 0)
	_, _ = cs[0].Write([]byte("held"))
	done := make(chan error)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
	for _, c := range cs {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("connection open after Close: %v", err)
		}
		c.Close()
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("still accepting after Close")
	}
	// proxy goroutines are gone (the echo server's end at cleanup)
	for i := 0; i < 100 && runtime.NumGoroutine() > before+2; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}

func TestNetPartition(t *testing.T) {
	n := NewNet()
	defer n.Close()
	names := []string{"n1", "n2", "n3"}
	addr := map[Link]string{}
	for _, from := range names {
		for _, to := range names {
			if from == to {
				continue
			}
			a, err := n.Add(from, to, echoServer(t))
			if err != nil {
				t.Fatal(err)
			}
			addr[Link{from, to}] = a
		}
	}
	if _, err := n.Add("n1", "n2", "x"); err == nil {
		t.Fatal("duplicate link accepted")
	}
	desc := n.Partition(Stall, 0, []string{"n1"}, []string{"n2", "n3"})
	if desc != "partition n1|n2,n3 stall" {
		t.Fatalf("desc %q", desc)
	}
	for l, a := range addr {
		c := dial(t, a)
		_, err := roundTrip(c, []byte("p"), 150*time.Millisecond)
		cut := (l.From == "n1") != (l.To == "n1")
		if cut != isTimeout(err) {
			t.Errorf("%v: cut=%v but round trip err %v", l, cut, err)
		}
	}
	n.Heal()
	for _, l := range n.Links() {
		if m, _ := n.Proxy(l.From, l.To).Mode(); m != Pass {
			t.Errorf("%v still %s after heal", l, m)
		}
	}
	n.Isolate(Blackhole, 0, "n3")
	if m, _ := n.Proxy("n1", "n3").Mode(); m != Blackhole {
		t.Fatal("isolate did not cut n1→n3")
	}
	if m, _ := n.Proxy("n1", "n2").Mode(); m != Pass {
		t.Fatal("isolate cut n1→n2")
	}
	if err := n.Set("n9", "n1", Pass, 0); err == nil {
		t.Fatal("Set on a missing link succeeded")
	}
}
