package resp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/tidwall/redcon"
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

// TestGuardBoundsWhatRedconTakesInAtOnce streams 16 MiB of pipelined XADDs
// (what redis-cli --pipe sends) over a real loopback connection into
// redcon's reader on top of the guard, as the server does. Each batch of
// commands redcon hands over stays within readWindow (plus the command that
// straddled the previous read); without the window, redcon's buffer kept
// doubling and the batches reached megabytes. Every command arrives intact.
func TestGuardBoundsWhatRedconTakesInAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 180000
	cmdOf := func(i int) []byte {
		return fmt.Appendf(nil, "*9\r\n$4\r\nXADD\r\n$1\r\ns\r\n$%d\r\n%d-0\r\n$8\r\ncustomer\r\n$8\r\nc%07d\r\n$6\r\namount\r\n$5\r\n%05d\r\n$3\r\nsku\r\n$10\r\nSKU-%06d\r\n",
			len(strconv.Itoa(i))+2, i, i, 10000+i%90000, i)
	}
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		w := bufio.NewWriterSize(c, 1<<20)
		for i := 1; i <= n; i++ {
			w.Write(cmdOf(i))
		}
		w.Flush()
	}()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sc.SetDeadline(time.Now().Add(60 * time.Second))
	rd := redcon.NewReader(newGuardConn(sc, 512<<20))
	got, maxBatch, batches := 0, 0, 0
	for got < n {
		cmds, err := rd.ReadCommands()
		if err != nil {
			t.Fatalf("after %d commands: %v", got, err)
		}
		size := 0
		for _, c := range cmds {
			got++
			if !bytes.Equal(c.Raw, cmdOf(got)) {
				t.Fatalf("command %d arrived as %q", got, c.Raw)
			}
			size += len(c.Raw)
		}
		maxBatch = max(maxBatch, size)
		batches++
		// Slow consumer, as the server is while it waits for the log: the
		// client's data piles up in the socket.
		if batches%50 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if maxBatch > readWindow+len(cmdOf(n)) {
		t.Fatalf("largest batch %d bytes, window %d (%d batches)", maxBatch, readWindow, batches)
	}
	t.Logf("%d commands in %d batches, largest %d bytes", n, batches, maxBatch)
}

// chunkConn is a net.Conn whose reads return its chunks one by one.
type chunkConn struct {
	net.Conn
	chunks [][]byte
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// TestGuardReadCompactsInPlaceWhateverTheSplits reads valid RESP through
// Read (which compacts in the caller's buffer and carries incomplete header
// lines over) with random socket chunks and random buffer sizes: redcon
// gets the input minus empty multibulks, and a bulk over the limit still
// ends the stream with its error header after the commands before it.
func TestGuardReadCompactsInPlaceWhateverTheSplits(t *testing.T) {
	in := []byte("*3\r\n$4\r\nXADD\r\n$1\r\ns\r\n$0\r\n\r\n*0\r\nPING inline\r\n*-1\r\n*1\r\n$12\r\nhello\r\nworld\r\n" +
		"*2\r\n$+3\r\nGET\r\n$0010\r\n0123456789\r\n*1\r\n$13\r\nhello world!!\r\n")
	want := "*3\r\n$4\r\nXADD\r\n$1\r\ns\r\n$0\r\n\r\nPING inline\r\n*1\r\n$12\r\nhello\r\nworld\r\n" +
		"*2\r\n$+3\r\nGET\r\n$0010\r\n0123456789\r\n*1\r\n$-1\r\n"
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for round := 0; round < 500; round++ {
		var chunks [][]byte
		for rest := in; len(rest) > 0; {
			n := 1 + rng.Intn(min(len(rest), 20))
			chunks = append(chunks, append([]byte(nil), rest[:n]...))
			rest = rest[n:]
		}
		g := newGuardConn(&chunkConn{chunks: chunks}, 12)
		var got []byte
		for i := 0; i < 10*len(in); i++ {
			p := make([]byte, 1+rng.Intn(80))
			n, err := g.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				break
			}
		}
		if string(got) != want {
			t.Fatalf("seed %d round %d: got %q", seed, round, got)
		}
	}
}

// pipelineOf is n XADDs as redis-benchmark sends them.
func pipelineOf(n int) []byte {
	return bytes.Repeat([]byte("*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nf\r\n$1\r\nv\r\n"), n)
}

// loopConn is a net.Conn whose every read returns the same bytes.
type loopConn struct {
	net.Conn
	b []byte
}

func (c loopConn) Read(p []byte) (int, error) { return copy(p, c.b), nil }

// TestGuardReadOfAPipelineAllocatesNothing: a pipeline of valid commands
// passes the guard without allocating (it used to be copied into a buffer
// of the guard's own and back, and each header parsed from a new string).
func TestGuardReadOfAPipelineAllocatesNothing(t *testing.T) {
	in := pipelineOf(16)
	g := newGuardConn(loopConn{b: in}, 512<<20)
	p := make([]byte, 4096)
	avg := testing.AllocsPerRun(1000, func() {
		if n, err := g.Read(p); err != nil || n != len(in) {
			t.Fatalf("read %d, %v", n, err)
		}
	})
	if avg != 0 {
		t.Fatalf("%.2f allocations per Read of 16 commands", avg)
	}
}

// BenchmarkGuardRead is the guard's cost per Read of a 16-command
// pipeline (redis-benchmark -P 16).
func BenchmarkGuardRead(b *testing.B) {
	in := pipelineOf(16)
	g := newGuardConn(loopConn{b: in}, 512<<20)
	p := make([]byte, 4096)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if n, err := g.Read(p); err != nil || n != len(in) {
			b.Fatalf("read %d, %v", n, err)
		}
	}
}
