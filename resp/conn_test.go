package resp

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// failingListener fails every Accept with a non-permanent error (as when
// the process is out of file descriptors), counting the calls.
type failingListener struct {
	net.Listener
	calls atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	return nil, errors.New("accept: too many open files")
}
func (l *failingListener) Close() error { return nil }

// TestAcceptErrorsBackOff: failing accepts are retried with a growing
// pause, not in a loop that takes a core while the condition lasts.
func TestAcceptErrorsBackOff(t *testing.T) {
	real, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	ln := &failingListener{Listener: real}
	srv := &connServer{serve: func(*conn, [][][]byte) {}, conns: map[*conn]bool{}}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	time.Sleep(500 * time.Millisecond)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if n := ln.calls.Load(); n > 20 {
		t.Fatalf("%d accepts in 0.5 s of failures, want a few (backing off)", n)
	}
}
