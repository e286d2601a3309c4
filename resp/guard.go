package resp

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"syscall"
)

// guardConn sits between a client socket and redcon's parser and enforces
// Redis's protocol limits before anything is buffered: a bulk longer than
// proto-max-bulk-len, or a multibulk count above INT_MAX, is replaced by
// a header redcon rejects with exactly Redis's error ("invalid bulk length",
// "invalid multibulk length"), after the commands before it have run, and
// nothing more is read. Empty multibulks ("*0", "*-1"), which Redis
// ignores, are dropped. Inline commands pass through untouched.
//
// It also bounds how much of a pipelined stream redcon takes in at once
// (readWindow): redcon doubles its buffer whenever a read fills it and ends
// inside a command, and shrinks it only when a read ended on a command
// boundary, so a client streaming commands (redis-cli --pipe) made it grow
// to tens of MiB, and the server then parsed and submitted all of it as one
// pipeline, holding every command and pending reply until the last was
// answered. Once redcon offers at least readWindow bytes, a Read reads at
// most that much and hands over only whole commands.
type guardConn struct {
	net.Conn
	maxBulk int64

	state     guardState
	line      []byte // the header line being accumulated
	remaining int64  // bulks left in the current multibulk
	skip      int64  // bulk payload bytes (with CRLF) left to pass through
	out       []byte // scanned bytes ready for redcon
	cut       int    // out[:cut] ends at a command boundary (0: none known)
	dead      bool   // an error header was produced: read no more
	tail      []byte // the error header, delivered in a Read of its own
	rerr      error  // read error to return once out is drained

	// lim is the server's client-query-buffer-limit (limits_buf.go); cur
	// counts the bytes of the command being received (what redcon must
	// buffer before it can parse it).
	lim *bufLimits
	cur int64

	// A multibulk declaring more than holdCount arguments is held here
	// until it is complete and only then handed to redcon: redcon's parser
	// steps through every declared argument each time it looks at an
	// incomplete command, so "*999999999\r\n" followed by a byte per read
	// cost it a second of CPU per read. after is output that follows what
	// a compact call wrote in place (a held command completed in it, and
	// what came after it in the same buffer); callers append it to out.
	holding bool
	hold    []byte
	after   []byte
}

// holdCount is the multibulk size above which the guard holds a command
// until it is complete (see guardConn.hold). Redcon's steps over a smaller
// incomplete command are cheap.
const holdCount = 1024

type guardState uint8

const (
	gFrame  guardState = iota // at the start of a command
	gCount                    // in "*<count>\r\n"
	gHeader                   // in "$<len>\r\n"
	gBody                     // in a bulk payload
	gInline                   // in an inline command line
	gPass                     // gave up parsing: pass everything through
)

// maxHeaderLine bounds a "*n" or "$n" line; longer ones go to redcon as is
// (it rejects them).
const maxHeaderLine = 64

// readWindow is the most a Read takes from the socket and hands redcon once
// redcon's buffer offers that much (see guardConn): a pipeline of up to
// about 2,700 XADDs of 90 bytes per round trip to the log, and a redcon
// buffer of at most twice this.
const readWindow = 256 << 10

func newGuardConn(c net.Conn, maxBulk int64) *guardConn {
	return &guardConn{Conn: c, maxBulk: maxBulk}
}

func (g *guardConn) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.tail != nil {
			// Alone in its Read, so that redcon has already run the
			// complete commands before it (it drops a whole buffer on a
			// parse error).
			g.out, g.tail = g.tail, nil
			break
		}
		if g.rerr != nil {
			return 0, g.rerr
		}
		if g.dead {
			return 0, io.EOF
		}
		window := min(len(p), readWindow)
		k := len(g.line)
		if k >= window {
			// No room for the carried header line in front: scan into
			// g.out (never for redcon's buffers, which are 4 KiB or more).
			n, err := g.Conn.Read(p[:window])
			g.scan(p[:n])
			if err != nil {
				g.rerr = err
			}
			continue
		}
		// Read straight into the caller's buffer, behind the header line
		// carried over from the last Read, and compact the output in
		// place: for a stream of valid commands nothing is copied.
		copy(p, g.line)
		g.cur -= int64(k) // compact counts the carried bytes again
		g.line = g.line[:0]
		n, err := g.Conn.Read(p[k:window])
		if err != nil {
			g.rerr = err
		}
		w, cut := g.compact(p[:k+n])
		if len(g.after) > 0 {
			// Held bytes follow: redcon gets them from out, after these.
			g.out = append(g.out[:0], g.after...)
			g.dropAfter()
			g.cut = 0
			if w == 0 {
				continue
			}
			return w, nil
		}
		if w == 0 {
			continue
		}
		if len(p) >= readWindow && cut > 0 && cut < w {
			// Whole commands only, so that redcon, having parsed them
			// all, shrinks its buffer instead of growing it for the rest.
			g.out = append(g.out[:0], p[cut:w]...)
			g.cut = 0
			return cut, nil
		}
		return w, nil
	}
	n := len(g.out)
	if len(p) >= readWindow && g.cut > 0 && g.cut < n {
		n = g.cut
	}
	n = copy(p, g.out[:n])
	g.out = g.out[n:]
	g.cut = max(g.cut-n, 0)
	if len(g.out) == 0 {
		g.out = nil
	}
	return n, nil
}

// SyscallConn exposes the socket (peerClosed peeks at it).
func (g *guardConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := g.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// scan appends to g.out what redcon is to get of b, which follows the
// bytes scanned before (the slow path of Read, and the tests).
func (g *guardConn) scan(b []byte) {
	buf := make([]byte, 0, len(g.line)+len(b))
	buf = append(append(buf, g.line...), b...)
	g.cur -= int64(len(g.line))
	g.line = g.line[:0]
	w, cut := g.compact(buf)
	if cut > 0 {
		g.cut = len(g.out) + cut
	}
	g.out = append(g.out, buf[:w]...)
	g.out = append(g.out, g.after...)
	g.dropAfter()
}

// dropAfter empties g.after, letting a large one go.
func (g *guardConn) dropAfter() {
	if cap(g.after) > 64<<10 {
		g.after = nil
	} else {
		g.after = g.after[:0]
	}
}

// compact scans b, which starts with the header line carried over in
// g.line if there was one, and moves what redcon is to get of it to the
// front of b: everything except empty multibulks, a rejected header and
// what follows it, and an incomplete header line at the end, which it
// keeps in g.line for the next Read. It returns the output's length and
// the end of its last whole command (0: none).
func (g *guardConn) compact(b []byte) (w, cut int) {
	r := 0
	qlim := g.lim.queryLimit()
	// toAfter: a held command completed in this call, so the rest of the
	// output follows it in g.after rather than in place.
	toAfter := false
	// emit moves b[from:to] to the output (no copy while nothing was
	// dropped before it), or to the held command.
	emit := func(from, to int) {
		switch {
		case g.holding:
			g.hold = append(g.hold, b[from:to]...)
		case toAfter:
			g.after = append(g.after, b[from:to]...)
		default:
			if w != from {
				copy(b[w:], b[from:to])
			}
			w += to - from
		}
	}
	// release hands the held command over (complete, or malformed or
	// rejected: then redcon reports it as it would have).
	release := func() {
		if !g.holding {
			return
		}
		g.holding = false
		if !toAfter {
			cut, toAfter = w, true
		}
		g.after = append(g.after, g.hold...)
		g.hold = nil
	}
	for r < len(b) && !g.dead {
		start := r
		if g.state == gPass {
			release()
		}
		switch g.state {
		case gPass:
			emit(r, len(b))
			r = len(b)
		case gFrame:
			if b[r] == '*' {
				g.state = gCount
			} else {
				g.state = gInline
			}
		case gInline:
			i := bytes.IndexByte(b[r:], '\n')
			if i < 0 {
				emit(r, len(b))
				r = len(b)
				break
			}
			emit(r, r+i+1)
			r += i + 1
			g.state = gFrame
		case gCount, gHeader:
			// A header line starts at r (compact's callers put a carried
			// one at the front of b). The usual one, a few digits and
			// CRLF, is parsed as it is found.
			j, n := r+1, int64(0)
			for j < len(b) && j-r <= 18 && b[j] >= '0' && b[j] <= '9' {
				n = n*10 + int64(b[j]-'0')
				j++
			}
			if j > r+1 && j+1 < len(b) && b[j] == '\r' && b[j+1] == '\n' {
				if g.headerN(b[r], n) {
					emit(r, j+2)
				}
				r = j + 2
				break
			}
			i := bytes.IndexByte(b[r:], '\n')
			if i < 0 {
				if len(b)-r > maxHeaderLine {
					emit(r, len(b))
					g.state = gPass
				} else {
					g.line = append(g.line[:0], b[r:]...)
				}
				r = len(b)
				break
			}
			if g.header(b[r : r+i+1]) {
				emit(r, r+i+1)
			}
			r += i + 1
		case gBody:
			n := min(int64(len(b)-r), g.skip)
			emit(r, r+int(n))
			r += int(n)
			g.skip -= n
			if g.skip == 0 {
				g.remaining--
				if g.remaining == 0 {
					g.state = gFrame
				} else {
					g.state = gHeader
				}
			}
		}
		if g.state == gFrame {
			release()
			g.cur = 0
			if !toAfter {
				cut = w
			}
			continue
		}
		g.cur += int64(r - start)
		if qlim > 0 && g.cur > qlim && g.lim.queryOver(g.cur, g.Conn) {
			// Closed without a reply, as Redis does; the complete
			// commands before this one still run.
			g.dead, g.rerr = true, errQueryBufferLimit
			g.holding, g.hold = false, nil // closed: nothing more runs
		}
	}
	if g.dead {
		release() // redcon reports the rejected header after it
	}
	return w, cut
}

// header handles a complete "*n\r\n" or "$n\r\n" line l and reports
// whether it goes to redcon.
func (g *guardConn) header(l []byte) bool {
	if len(l) < 3 || l[len(l)-2] != '\r' {
		g.state = gPass // malformed: redcon reports it
		return true
	}
	n, ok := parseHeaderInt(l[1 : len(l)-2])
	if !ok {
		g.state = gPass
		return true
	}
	return g.headerN(l[0], n)
}

// headerN is header for a line of type c ('*' or '$' expected) and number
// n.
func (g *guardConn) headerN(c byte, n int64) bool {
	if g.state == gHeader && c != '$' {
		g.state = gPass
		return true
	}
	if g.state == gCount {
		switch {
		case n <= 0:
			g.state = gFrame // Redis ignores empty multibulks
			return false
		case n > maxArgs:
			g.tail = []byte("*-1\r\n")
			g.dead = true
			return false
		default:
			g.remaining = n
			g.state = gHeader
			g.holding = n > holdCount
			return true
		}
	}
	if n < 0 || n > g.maxBulk {
		g.tail = []byte("$-1\r\n")
		g.dead = true
		return false
	}
	g.skip = n + 2
	g.state = gBody
	return true
}

// parseHeaderInt is strconv.ParseInt(string(b), 10, 64) without the
// allocation for the usual short decimal.
func parseHeaderInt(b []byte) (int64, bool) {
	d := b
	if len(d) > 0 && (d[0] == '-' || d[0] == '+') {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if b[0] == '-' {
		n = -n
	}
	return n, true
}

// guardListener wraps accepted connections in guardConn.
type guardListener struct {
	net.Listener
	maxBulk int64
	lim     *bufLimits
}

func (l guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := newGuardConn(c, l.maxBulk)
	g.lim = l.lim
	return g, nil
}
