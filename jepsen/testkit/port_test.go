package testkit

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortIsOutsideTheEphemeralRange: the ports handed out can be bound,
// lie below the kernel's ephemeral range, where no outgoing connection can
// take them before the server they are meant for binds them, and are never
// handed out twice.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	if lo <= minPort+1000 {
		t.Skipf("ephemeral range starts at %d: FreePort leaves the choice to the kernel", lo)
	}
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		if p < minPort || p >= lo {
			t.Fatalf("FreePort = %d, want %d <= port < %d", p, minPort, lo)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d from FreePort: %v", p, err)
		}
		l.Close()
		seen[p] = true
	}
	if len(seen) != 50 {
		t.Fatalf("50 calls gave only %d distinct ports", len(seen))
	}
}
