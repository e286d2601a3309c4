package wire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
func readAll(rd *Reader) string {
	var b strings.Builder
	for range 100000 {
		cmds, err := rd.ReadCommands()
		for _, c := range cmds {
			fmt.Fprintf(&b, "%q\n", c)
		}
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			return b.String()
		}
	}
	return b.String() + "too many reads\n"
}

// reference parses a whole stream the plain way, as Redis's
// processMultibulkBuffer and processInlineBuffer do: the specification the
// incremental Reader is held to.
func reference(in []byte, maxBulk int64) string {
	var b strings.Builder
	emit := func(argv [][]byte) { fmt.Fprintf(&b, "%q\n", argv) }
	fail := func(msg string) string { return b.String() + "error: Protocol error: " + msg + "\n" }
	line := func(at int) (string, int, bool) { // the CRLF-ended line at at, and what follows
		j := bytes.IndexByte(in[at:], '\n')
		if j < 0 {
			return "", 0, false
		}
		l := string(in[at : at+j])
		if !strings.HasSuffix(l, "\r") || len(l) < 2 {
			return "\x00", at + j + 1, true // marks a malformed line
		}
		return strings.TrimSuffix(l, "\r"), at + j + 1, true
	}
	redisInt := func(s string) (int64, bool) {
		if s == "" || s == "-" || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "0") && s != "0" || strings.HasPrefix(s, "-0") {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	pos := 0
	for pos < len(in) {
		if in[pos] != '*' {
			end, argv, err := parseInline(in[pos:])
			if bytes.IndexByte(in[pos:], '\n') < 0 {
				break
			}
			if err != nil {
				return fail(strings.TrimPrefix(err.Error(), "Protocol error: "))
			}
			if len(argv) > 0 {
				emit(argv)
			}
			pos += end
			continue
		}
		l, next, ok := line(pos)
		if !ok {
			if len(in)-pos > maxLine {
				return fail("too big mbulk count string")
			}
			break
		}
		n, good := redisInt(l[1:])
		if l == "\x00" || !good || n > MaxArgs {
			return fail("invalid multibulk length")
		}
		if n <= 0 {
			pos = next
			continue
		}
		var argv [][]byte
		at := next
		complete := true
		for range n {
			if at >= len(in) {
				complete = false
				break
			}
			if in[at] != '$' {
				return fail("expected '$', got '" + string(in[at]) + "'")
			}
			l, next, ok := line(at)
			if !ok {
				if len(in)-at > maxLine {
					return fail("too big bulk count string")
				}
				complete = false
				break
			}
			size, good := redisInt(l[1:])
			if l == "\x00" || !good || size < 0 || size > maxBulk {
				return fail("invalid bulk length")
			}
			if next+int(size)+2 > len(in) {
				complete = false
				break
			}
			if in[next+int(size)] != '\r' || in[next+int(size)+1] != '\n' {
				return fail("invalid bulk length")
			}
			argv = append(argv, in[next:next+int(size)])
			at = next + int(size) + 2
		}
		if !complete {
			break
		}
		emit(argv)
		pos = at
	}
	return b.String() + "error: EOF\n"
}

// randomStream is commands as clients send them, valid and not: RESP
// multibulks of random arguments, inline commands with quotes, empty
// multibulks, and now and then a malformed or oversized header.
func randomStream(rng *rand.Rand) []byte {
	var b bytes.Buffer
	for range rng.IntN(40) + 1 {
		switch rng.IntN(14) {
		case 0:
			fmt.Fprintf(&b, "PING %d\r\n", rng.IntN(100))
		case 1:
			b.WriteString(`SET "a b" 'c\n'` + "\r\n")
		case 2:
			b.WriteString([]string{"\r\n", "*0\r\n", "*-1\r\n", "*-20\r\n"}[rng.IntN(4)])
		case 3:
			// malformed, one kind or another
			b.WriteString([]string{"*x\r\n", "*2\r\n$1\r\na\r\n%1\r\n", "*1\r\n$-2\r\n", "*1\r\n$-1\r\n",
				"*1\r\n$1\r\nab\r\n", "GET 'unbalanced\r\n", "*1\n", "*+1\r\n$1\r\na\r\n", "*1\r\n$01\r\na\r\n",
				"*1\r\n$2000\r\n", "*3000000000\r\n", "*1\r\n$\r\n", "*\r\n"}[rng.IntN(13)])
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

// TestReaderMatchesReference: on random streams, valid and malformed, cut
// into random reads, the Reader gives the commands and the error the
// whole-stream reference gives.
func TestReaderMatchesReference(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	for i := range 3000 {
		data := randomStream(rng)
		sizes := make([]int, 400)
		for j := range sizes {
			sizes[j] = 1 + rng.IntN(3000)
			if rng.IntN(4) == 0 {
				sizes[j] = 1 + rng.IntN(8)
			}
		}
		want := reference(data, 1000)
		got := readAll(NewReader(&chunkReader{data: data, sizes: sizes}, Limits{MaxBulk: 1000}))
		if got != want {
			t.Fatalf("seed %d stream %d (%q):\ngot\n%.3000s\nwant\n%.3000s", seed, i, data, got, want)
		}
	}
}

// TestReaderArgumentsOutliveTheRead: arguments are copies that later reads
// do not overwrite (a MULTI queue keeps them).
func TestReaderArgumentsOutliveTheRead(t *testing.T) {
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
	rd := NewReader(&chunkReader{data: in.Bytes(), sizes: sizes}, Limits{})
	var kept [][]byte
	for {
		cmds, err := rd.ReadCommands()
		if err != nil {
			break
		}
		for _, c := range cmds {
			kept = append(kept, c[1])
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

// TestReaderAllocs: a read of a 16-command pipeline costs two allocations
// (the commands' bytes and their arguments), not several per command.
func TestReaderAllocs(t *testing.T) {
	var p bytes.Buffer
	for range 16 {
		p.WriteString("*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nf\r\n$1\r\nv\r\n")
	}
	pipeline := p.Bytes()
	src := &chunkReader{}
	rd := NewReader(src, Limits{})
	read := func() {
		src.data = pipeline
		cmds, err := rd.ReadCommands()
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

// TestReaderKeepsNoEarlierRead: once a call's commands were taken, the
// reader holds nothing of them (they would keep the read's bytes alive),
// and a bulk read's slices are not kept for the reads after it.
func TestReaderKeepsNoEarlierRead(t *testing.T) {
	var bulk bytes.Buffer
	for range 3000 {
		bulk.WriteString("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	}
	one := "*1\r\n$4\r\nPING\r\n"
	src := &chunkReader{}
	rd := NewReader(src, Limits{})
	for _, tc := range []struct {
		in   string
		want int
	}{{one + one + one, 3}, {one, 1}, {bulk.String(), 3000}, {one, 1}} {
		src.data = []byte(tc.in)
		got := 0
		for got < tc.want {
			cmds, err := rd.ReadCommands()
			if err != nil {
				t.Fatal(err)
			}
			got += len(cmds)
		}
		for i, c := range rd.cmds[len(rd.cmds):cap(rd.cmds)] {
			if c != nil {
				t.Fatalf("after a read of %d commands, slot %d still holds an earlier command", tc.want, len(rd.cmds)+i)
			}
		}
	}
	if cap(rd.cmds) > maxKeptCmds {
		t.Fatalf("the reader kept room for %d commands after the bulk read", cap(rd.cmds))
	}
}

// TestReaderLimits: an oversized bulk, a multibulk count above INT_MAX and
// a command outgrowing the query buffer limit end the stream after the
// complete commands before them; empty multibulks are skipped.
func TestReaderLimits(t *testing.T) {
	ping := "*1\r\n$4\r\nPING\r\n"
	for _, tc := range []struct {
		name, in string
		query    int64
		want     string
	}{
		{"oversized bulk", ping + "*2\r\n$3\r\nGET\r\n$11\r\nhello world\r\n", 0,
			"[\"PING\"]\nerror: Protocol error: invalid bulk length\n"},
		{"negative bulk", ping + "*1\r\n$-1\r\n", 0, "[\"PING\"]\nerror: Protocol error: invalid bulk length\n"},
		{"huge count", ping + "*2147483648\r\n", 0, "[\"PING\"]\nerror: Protocol error: invalid multibulk length\n"},
		{"largest count", ping + "*2147483647\r\n", 0, "[\"PING\"]\nerror: EOF\n"},
		{"empty multibulks", "*0\r\n*-1\r\n" + ping + "*-5\r\n" + ping, 0, "[\"PING\"]\n[\"PING\"]\nerror: EOF\n"},
		{"query limit", ping + "*2\r\n$3\r\nGET\r\n$10\r\n0123", 20,
			"[\"PING\"]\nerror: " + ErrQueryLimit.Error() + "\n"},
		{"query limit inline", ping + strings.Repeat("x", 30), 20,
			"[\"PING\"]\nerror: " + ErrQueryLimit.Error() + "\n"},
	} {
		var over func(int64) bool
		if tc.query > 0 {
			over = func(n int64) bool { return n > tc.query }
		}
		got := readAll(NewReader(&chunkReader{data: []byte(tc.in)}, Limits{MaxBulk: 10, QueryOver: over}))
		if got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// TestReaderBoundsBatches streams 16 MiB of pipelined XADDs (what
// redis-cli --pipe sends) over a real loopback connection, the consumer
// slower than the client: each batch of commands handed over stays within
// ReadWindow plus the command that straddled the previous read, and every
// command arrives intact.
func TestReaderBoundsBatches(t *testing.T) {
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
	rd := NewReader(sc, Limits{})
	got, maxBatch, batches := 0, 0, 0
	for got < n {
		cmds, err := rd.ReadCommands()
		if err != nil {
			t.Fatalf("after %d commands: %v", got, err)
		}
		size := 0
		for _, c := range cmds {
			got++
			enc := AppendCommand(nil, c)
			if !bytes.Equal(enc, cmdOf(got)) {
				t.Fatalf("command %d arrived as %q", got, enc)
			}
			size += len(enc)
		}
		maxBatch = max(maxBatch, size)
		batches++
		if batches%50 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if maxBatch > ReadWindow+len(cmdOf(n)) {
		t.Fatalf("largest batch %d bytes, window %d (%d batches)", maxBatch, ReadWindow, batches)
	}
	t.Logf("%d commands in %d batches, largest %d bytes", n, batches, maxBatch)
}

// TestSlowHugeCommandIsNotRescanned: "*999999999" and then an argument per
// read, or a long inline line a few bytes per read, cost a parse of the new
// bytes only, not of everything buffered so far.
func TestSlowHugeCommandIsNotRescanned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first string
		each  string
	}{
		{"multibulk", "*999999999\r\n", "$1\r\na\r\n"},
		{"inline", "SET k ", strings.Repeat("v", 7)},
	} {
		sizes := []int{len(tc.first)}
		data := []byte(tc.first)
		for range 200000 {
			data = append(data, tc.each...)
			sizes = append(sizes, len(tc.each))
		}
		rd := NewReader(&chunkReader{data: data, sizes: sizes}, Limits{})
		before := cpuTime(t)
		if cmds, err := rd.ReadCommands(); err != io.EOF {
			t.Fatalf("%s: %d commands, %v", tc.name, len(cmds), err)
		}
		if used := cpuTime(t) - before; used > time.Second {
			t.Fatalf("%s: 200,000 reads of one incomplete command cost %v of CPU", tc.name, used)
		}
	}
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var fuzzSeeds = []string{
	"*3\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n",
	"*1\r\n$4\r\nPING\r\n", "PING\r\n", "*0\r\n", "*-1\r\n", "$-1\r\n", "*99999999999999999999\r\n",
	"*2\r\n$999999999999\r\n", "*1\r\n*1\r\n*1\r\n$1\r\nx\r\n", "*1\r\n$-5\r\n", "*3\r\n$3\r\nSET\r\n",
	"\x00\xff\xfe*\r\n$\r\n", "\"unbalanced quote\r\n", "*1\r\n$4\r\nPINGxx\r\n", "*2\r\n:1\r\n+x\r\n",
}

// FuzzReader runs arbitrary bytes through the Reader in small reads and
// whole: no panic, the same result both ways, the reference's result, and
// no RESP argument over the bulk limit.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		const maxBulk = 1 << 10
		sizes := make([]int, len(in))
		for i := range sizes {
			sizes[i] = int(step%16) + 1
		}
		whole := readAll(NewReader(&chunkReader{data: in}, Limits{MaxBulk: maxBulk}))
		bits := readAll(NewReader(&chunkReader{data: in, sizes: sizes}, Limits{MaxBulk: maxBulk}))
		if whole != bits {
			t.Fatalf("%q: whole\n%s\nin reads of %d\n%s", in, whole, step%16+1, bits)
		}
		if want := reference(in, maxBulk); whole != want {
			t.Fatalf("%q: got\n%s\nwant\n%s", in, whole, want)
		}
	})
}
