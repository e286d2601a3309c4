package testkit

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that no earlier call in this test binary returned. It is taken below the
// kernel's ephemeral range (ip_local_port_range), where outgoing
// connections never get their local port: a port from the range could be
// given to one, such as a cluster's own dial to a peer, between this call
// and the server binding it (seen as "address already in use" for the fifth
// node of a systest cluster). Where the range cannot be read or leaves no
// room below it, the kernel picks the port.
func FreePort(t testing.TB) int {
	t.Helper()
	if lo := ephemeralLow(); lo > minPort+1000 {
		for range 100 {
			p := minPort + rand.IntN(lo-minPort)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				l.Close()
				if given.take(p) {
					return p
				}
			}
		}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if given.take(p) {
			return p
		}
	}
	t.Fatal("free port: every port offered was given out before")
	return 0
}

// minPort is the lowest port FreePort hands out (clear of well-known ones).
const minPort = 10000

// given holds the ports FreePort returned: two nodes of one cluster must
// never be handed the same port, although each was free when asked for.
var given = portSet{m: map[int]bool{}}

type portSet struct {
	mu sync.Mutex
	m  map[int]bool
}

// take records p and reports whether it was new.
func (s *portSet) take(p int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[p] {
		return false
	}
	s.m[p] = true
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range, 0 if it
// cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(string(f[0]))
	if err != nil {
		return 0
	}
	return lo
}
