package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// start runs a floor server in mode on a loopback port for the test.
func start(t *testing.T, mode string) (*server, string) {
	t.Helper()
	overlap := mode == "epoll-overlap"
	if overlap {
		mode = "epoll"
	}
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(mode, t.TempDir(), overlap)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.serve(ln); close(done) }()
	t.Cleanup(func() { ln.Close(); <-done; s.close() })
	return s, ln.Addr().String()
}

// exchange sends in on a new connection and reads n reply lines' worth of
// bulk replies (or one error line).
func exchange(t *testing.T, addr, in string, n int) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(c)
	var out []string
	for len(out) < n {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		if strings.HasPrefix(line, "-") {
			return append(out, line)
		}
		size, err := strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
		if line[0] != '$' || err != nil {
			t.Fatalf("reply %q is not a bulk string", line)
		}
		body, err := rd.ReadString('\n')
		if err != nil || len(body) != size+2 {
			t.Fatalf("bulk of %d: %q, %v", size, body, err)
		}
		out = append(out, strings.TrimSuffix(body, "\r\n"))
	}
	return out
}

const xadd = "*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nf\r\n$1\r\nv\r\n"

// TestRepliesAnIDPerCommand: a pipeline of three gets three distinct IDs,
// in order, in both modes; batch mode writes and fdatasyncs a record per
// command before it replies.
func TestRepliesAnIDPerCommand(t *testing.T) {
	for _, mode := range []string{"direct", "batch", "batch-reply", "epoll", "epoll-overlap"} {
		s, addr := start(t, mode)
		ids := exchange(t, addr, strings.Repeat(xadd, 3), 3)
		last := int64(0)
		for _, id := range ids {
			ms, seq, ok := strings.Cut(id, "-")
			n, err := strconv.ParseInt(seq, 10, 64)
			if _, merr := strconv.ParseInt(ms, 10, 64); !ok || err != nil || merr != nil || n <= last {
				t.Fatalf("%s: IDs %q: want <ms>-<seq>, seq rising", mode, ids)
			}
			last = n
		}
		if mode == "direct" {
			if s.log != nil || s.batches.Load() != 0 {
				t.Fatalf("direct mode wrote a log")
			}
			continue
		}
		fi, err := os.Stat(s.log.Name())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != 3*recordSize || s.commands.Load() != 3 || s.batches.Load() < 1 {
			t.Fatalf("batch mode: file of %d bytes, %d commands in %d fdatasyncs; want %d bytes, 3 commands",
				fi.Size(), s.commands.Load(), s.batches.Load(), 3*recordSize)
		}
	}
}

// TestProtocolErrorIsAnswered: anything but a multibulk command gets an
// error reply, after the replies of the commands before it, and the
// connection closes.
func TestProtocolErrorIsAnswered(t *testing.T) {
	for _, mode := range []string{"direct", "batch", "batch-reply", "epoll", "epoll-overlap"} {
		_, addr := start(t, mode)
		for _, in := range []string{"PING\r\n", "*1\r\n+x\r\n", "*-2\r\n", xadd + "PING\r\n"} {
			ids := strings.Count(in, xadd)
			got := exchange(t, addr, in, ids+1)
			if len(got) != ids+1 || !strings.HasPrefix(got[ids], "-ERR Protocol error") || (ids > 0 && strings.HasPrefix(got[0], "-")) {
				t.Errorf("%s: %q: got %q, want %d IDs, then a protocol error", mode, in, got, ids)
			}
		}
	}
}

// TestPreallocatedRingKeepsTheFileSize: with -prealloc the log is
// zero-filled first and written as a ring, so the file never grows and
// the records land where the ring says.
func TestPreallocatedRingKeepsTheFileSize(t *testing.T) {
	s, err := newServer("epoll", t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	const ring = 3*recordSize + recordSize/2
	if err := s.preallocate(ring); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, recordSize)
	for i := range 5 {
		for j := range rec {
			rec[j] = byte('a' + i)
		}
		if err := s.write(rec); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(s.log.Name())
	if err != nil {
		t.Fatal(err)
	}
	// Records a, b, c, then half of d fill the ring; d's second half and e
	// overwrite from the start.
	want := strings.Repeat("d", recordSize/2) + strings.Repeat("e", recordSize) + strings.Repeat("b", recordSize/2) +
		strings.Repeat("c", recordSize) + strings.Repeat("d", recordSize/2)
	if len(data) != ring || string(data) != want {
		t.Fatalf("file of %d bytes %q, want %d bytes %q", len(data), data, ring, want)
	}
}

// TestCommandSplitAcrossReads: in epoll mode a command whose bytes arrive
// in two reads is answered when it is whole, and the whole command before
// it is not held back for it. (The goroutine modes read on until the
// command is whole.)
func TestCommandSplitAcrossReads(t *testing.T) {
	for _, mode := range []string{"epoll", "epoll-overlap"} {
		_, addr := start(t, mode)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		half := len(xadd) / 2
		if _, err := c.Write([]byte(xadd + xadd[:half])); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(c)
		first, err := rd.ReadString('\n')
		if err != nil || first[0] != '$' {
			t.Fatalf("%s: first reply %q, %v", mode, first, err)
		}
		rd.ReadString('\n')
		// Nothing more until the second command is whole.
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		var ne net.Error
		if early, err := rd.ReadString('\n'); !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%s: before the second command was whole: %q, %v", mode, early, err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(xadd[half:])); err != nil {
			t.Fatal(err)
		}
		if second, err := rd.ReadString('\n'); err != nil || second[0] != '$' {
			t.Fatalf("%s: second reply %q, %v", mode, second, err)
		}
		c.Close()
	}
}
