package resp

import (
	"bytes"
	"fmt"
	"math/rand"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/redcon"
)

// bigCommand is a multibulk of n arguments.
func bigCommand(n int) []byte {
	b := fmt.Appendf(nil, "*%d\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n", n)
	for i := 3; i < n; i++ {
		b = fmt.Appendf(b, "$%d\r\n%d\r\n", len(strconv.Itoa(i)), i)
	}
	return b
}

// TestGuardHoldsLargeMultibulksUntilComplete: a multibulk of more than
// holdCount arguments reaches redcon only once complete, and in order with
// the commands around it, whatever the splits; an incomplete one never
// reaches it.
func TestGuardHoldsLargeMultibulksUntilComplete(t *testing.T) {
	ping := []byte("*1\r\n$4\r\nPING\r\n")
	big := bigCommand(3001)
	in := append(append(append(append([]byte(nil), ping...), big...), ping...), big...)
	in = append(in, big[:len(big)-7]...) // a third, incomplete
	want := string(in[:len(in)-(len(big)-7)])
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for round := 0; round < 100; round++ {
		var chunks [][]byte
		for rest := in; len(rest) > 0; {
			n := 1 + rng.Intn(min(len(rest), 5000))
			chunks = append(chunks, append([]byte(nil), rest[:n]...))
			rest = rest[n:]
		}
		g := newGuardConn(&chunkConn{chunks: chunks}, 1<<20)
		var got []byte
		for i := 0; i < 10*len(in); i++ {
			p := make([]byte, 16+rng.Intn(8192))
			n, err := g.Read(p)
			got = append(got, p[:n]...)
			if n > 0 && bytes.Contains(got, big[:len(big)-7]) && len(got) > len(want) {
				t.Fatalf("seed %d round %d: the incomplete command reached redcon", seed, round)
			}
			if err != nil {
				break
			}
		}
		if string(got) != want {
			t.Fatalf("seed %d round %d: redcon got %d bytes, want %d (equal prefix %d)", seed, round, len(got), len(want), commonPrefix(got, []byte(want)))
		}
	}
	// Through redcon: the two complete commands parse with every argument.
	rd := redcon.NewReader(newGuardConn(&chunkConn{chunks: [][]byte{in}}, 1<<20))
	var args []int
	for {
		cmd, err := rd.ReadCommand()
		if err != nil {
			break
		}
		args = append(args, len(cmd.Args))
	}
	if fmt.Sprint(args) != "[1 3001 1 3001]" {
		t.Fatalf("redcon parsed commands of %v arguments", args)
	}
}

func commonPrefix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// TestHugeMultibulkCountCostsNoCPU: "*999999999" followed by a byte per
// read used to cost redcon's parser about a second of CPU per read (it
// steps through every declared argument of an incomplete command); held by
// the guard, the reads cost next to nothing.
func TestHugeMultibulkCountCostsNoCPU(t *testing.T) {
	chunks := [][]byte{[]byte("*999999999\r\n")}
	for i := 0; i < 10; i++ {
		chunks = append(chunks, []byte("$1\r\na\r\n"))
	}
	rd := redcon.NewReader(newGuardConn(&chunkConn{chunks: chunks}, 1<<20))
	before := cpuTime(t)
	if cmd, err := rd.ReadCommand(); err == nil {
		t.Fatalf("parsed %d arguments of an incomplete command", len(cmd.Args))
	}
	if used := cpuTime(t) - before; used > 500*time.Millisecond {
		t.Fatalf("11 reads of an incomplete *999999999 command cost %v of CPU", used)
	}
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
