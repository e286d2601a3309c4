package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/redcon"
)

// chunkReader hands out its data in the given read sizes.
type chunkReader struct {
	data  []byte
	sizes []int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = min(n, r.sizes[0])
		r.sizes = r.sizes[1:]
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// readAll reads commands until an error, rendering each and the error.
func readAll(next func() ([]redcon.Command, error)) string {
	var b strings.Builder
	for range 10000 {
		cmds, err := next()
		for _, c := range cmds {
			fmt.Fprintf(&b, "%q raw=%q\n", c.Args, c.Raw)
		}
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			return b.String()
		}
	}
	return b.String() + "too many reads\n"
}

// randomStream is commands as clients send them, valid and not: RESP
// multibulks of random arguments, inline commands with quotes, and
// occasionally a malformed header or quote.
func randomStream(rng *rand.Rand) []byte {
	var b bytes.Buffer
	for range rng.IntN(40) + 1 {
		switch rng.IntN(12) {
		case 0:
			fmt.Fprintf(&b, "PING %d\r\n", rng.IntN(100))
		case 1:
			b.WriteString(`SET "a b" 'c\n'` + "\r\n")
		case 2:
			b.WriteString("\r\n")
		case 3:
			// malformed, one kind or another
			b.WriteString([]string{"*x\r\n", "*2\r\n$1\r\na\r\n%1\r\n", "*1\r\n$-2\r\n", "*1\r\n$-1\r\n", "*1\r\n$1\r\nab\r\n", "GET 'unbalanced\r\n", "*1\n", "*2\r\n$1\r\na\r\n*1\r\n"}[rng.IntN(8)])
		default:
			n := rng.IntN(20) + 1
			fmt.Fprintf(&b, "*%d\r\n", n)
			for range n {
				a := strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(300))
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
			}
		}
	}
	return b.Bytes()
}

// TestCmdReaderMatchesRedcon: on random streams, valid and malformed, cut
// into random reads, cmdReader gives the commands (arguments and raw
// bytes) and the error redcon's reader gives.
func TestCmdReaderMatchesRedcon(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 2000 {
		data := randomStream(rng)
		sizes := make([]int, 200)
		for j := range sizes {
			sizes[j] = 1 + rng.IntN(3000)
			if rng.IntN(4) == 0 {
				sizes[j] = 1 + rng.IntN(8)
			}
		}
		want := readAll(redcon.NewReader(&chunkReader{data: data, sizes: append([]int(nil), sizes...)}).ReadCommands)
		got := readAll(newCmdReader(&chunkReader{data: data, sizes: append([]int(nil), sizes...)}).readCommands)
		if got != want {
			t.Fatalf("stream %d (%q):\ngot\n%.2000s\nwant (redcon)\n%.2000s", i, data, got, want)
		}
	}
}

// TestCmdReaderArgumentsOutliveTheRead: arguments are copies that later
// reads do not overwrite (a MULTI queue keeps them).
func TestCmdReaderArgumentsOutliveTheRead(t *testing.T) {
	var in bytes.Buffer
	const n = 1000
	for i := range n {
		fmt.Fprintf(&in, "*2\r\n$3\r\nSET\r\n$4\r\nk%03d\r\n", i%1000)
	}
	// Reads that end on command boundaries (the buffer is then reused
	// from its front) and reads that do not.
	one := in.Len() / n
	var sizes []int
	for range 300 {
		sizes = append(sizes, 3*one, 7, one-7, 5*one+3, one-3)
	}
	rd := newCmdReader(&chunkReader{data: in.Bytes(), sizes: sizes})
	var kept [][]byte
	for {
		cmds, err := rd.readCommands()
		if err != nil {
			break
		}
		for _, c := range cmds {
			kept = append(kept, c.Args[1])
		}
	}
	if len(kept) != n {
		t.Fatalf("%d commands, want %d", len(kept), n)
	}
	for i, k := range kept {
		if want := fmt.Sprintf("k%03d", i%1000); string(k) != want {
			t.Fatalf("argument %d is %q, want %q", i, k, want)
		}
	}
}

// TestCmdReaderAllocs: a read of a 16-command pipeline costs two
// allocations (the commands' bytes and their arguments), not redcon's
// four or more per command.
func TestCmdReaderAllocs(t *testing.T) {
	var p bytes.Buffer
	for range 16 {
		p.WriteString("*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nf\r\n$1\r\nv\r\n")
	}
	pipeline := p.Bytes()
	src := &chunkReader{}
	rd := newCmdReader(src)
	read := func() {
		src.data = pipeline
		cmds, err := rd.readCommands()
		if err != nil || len(cmds) != 16 {
			t.Fatalf("read %d commands, %v", len(cmds), err)
		}
	}
	read()
	avg := testing.AllocsPerRun(200, read)
	t.Logf("%.1f allocations per read of 16 commands", avg)
	if avg > 2 {
		t.Fatalf("%.1f allocations per read of 16 commands, want at most 2", avg)
	}
}

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
	srv := newConnServer(func(redcon.Conn, redcon.Command) {}, nil, nil)
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

// TestCmdReaderKeepsNoEarlierRead: once a read's commands have run, the
// reader holds nothing of them (they would keep the read's bytes alive),
// and a bulk read's slices are not kept for the reads after it.
func TestCmdReaderKeepsNoEarlierRead(t *testing.T) {
	var bulk bytes.Buffer
	for range 3000 {
		bulk.WriteString("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	}
	one := "*1\r\n$4\r\nPING\r\n"
	src := &chunkReader{}
	rd := newCmdReader(src)
	for _, tc := range []struct {
		in   string
		want int
	}{{one + one + one, 3}, {one, 1}, {bulk.String(), 3000}, {one, 1}} {
		src.data = []byte(tc.in)
		got := 0
		for got < tc.want {
			cmds, err := rd.readCommands()
			if err != nil {
				t.Fatal(err)
			}
			got += len(cmds)
		}
		for i, c := range rd.cmds[len(rd.cmds):cap(rd.cmds)] {
			if c.Args != nil || c.Raw != nil {
				t.Fatalf("after a read of %d commands, slot %d still holds an earlier command", tc.want, len(rd.cmds)+i)
			}
		}
	}
	if cap(rd.cmds) > maxKeptCmds {
		t.Fatalf("the reader kept room for %d commands after the bulk read", cap(rd.cmds))
	}
}
