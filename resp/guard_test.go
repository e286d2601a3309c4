package resp

import (
	"bytes"
	"math/rand"
	"testing"
	"time"
)

// TestGuardPassesValidStreamsWhateverTheSplits feeds valid RESP (and inline
// commands) to the guard in random chunk sizes: the output is the input
// minus empty multibulks.
func TestGuardPassesValidStreamsWhateverTheSplits(t *testing.T) {
	in := []byte("*3\r\n$4\r\nXADD\r\n$1\r\ns\r\n$0\r\n\r\n*0\r\nPING inline\r\n*-1\r\n*1\r\n$12\r\nhello\r\nworld\r\n")
	want := []byte("*3\r\n$4\r\nXADD\r\n$1\r\ns\r\n$0\r\n\r\nPING inline\r\n*1\r\n$12\r\nhello\r\nworld\r\n")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for round := 0; round < 200; round++ {
		g := newGuardConn(nil, 100)
		for rest := in; len(rest) > 0; {
			n := 1 + rng.Intn(len(rest))
			g.scan(rest[:n])
			rest = rest[n:]
		}
		if !bytes.Equal(g.out, want) || g.dead {
			t.Fatalf("seed %d round %d: out %q dead %v", seed, round, g.out, g.dead)
		}
	}
}

func TestGuardRejectsOversizedBulk(t *testing.T) {
	g := newGuardConn(nil, 10)
	g.scan([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$11\r\nhello world\r\n"))
	if want := "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n"; string(g.out) != want || !g.dead || string(g.tail) != "$-1\r\n" {
		t.Fatalf("out %q tail %q dead %v", g.out, g.tail, g.dead)
	}
}
