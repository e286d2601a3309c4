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
type guardConn struct {
	net.Conn
	maxBulk int64

	state     guardState
	line      []byte // the header line being accumulated
	remaining int64  // bulks left in the current multibulk
	skip      int64  // bulk payload bytes (with CRLF) left to pass through
	out       []byte // scanned bytes ready for redcon
	dead      bool   // an error header was produced: read no more
	tail      []byte // the error header, delivered in a Read of its own
	rerr      error  // read error to return once out is drained

	// lim is the server's client-query-buffer-limit (limits_buf.go); cur
	// counts the bytes of the command being received (what redcon must
	// buffer before it can parse it).
	lim *bufLimits
	cur int64
}

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
		// Read straight into the caller's buffer: scan copies what it
		// keeps, so an idle connection pins no buffer of its own.
		n, err := g.Conn.Read(p)
		g.scan(p[:n])
		if err != nil {
			g.rerr = err
		}
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
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

func (g *guardConn) scan(b []byte) {
	for len(b) > 0 && !g.dead {
		before := len(b)
		b = g.step(b)
		if g.state == gFrame {
			g.cur = 0
			continue
		}
		g.cur += int64(before - len(b))
		if g.lim.queryOver(g.cur, g.Conn) {
			// Closed without a reply, as Redis does; the complete
			// commands before this one still run.
			g.dead, g.rerr = true, errQueryBufferLimit
		}
	}
}

// step consumes the start of b in the current state and returns the rest.
func (g *guardConn) step(b []byte) []byte {
	switch g.state {
	case gPass:
		g.out = append(g.out, b...)
		return nil
	case gFrame:
		if b[0] == '*' {
			g.state, g.line = gCount, g.line[:0]
		} else {
			g.state = gInline
		}
	case gInline:
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			g.out = append(g.out, b...)
			return nil
		}
		g.out = append(g.out, b[:i+1]...)
		b = b[i+1:]
		g.state = gFrame
	case gCount, gHeader:
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			g.line = append(g.line, b...)
			b = nil
			if len(g.line) > maxHeaderLine {
				g.out = append(g.out, g.line...)
				g.state = gPass
			}
			return nil
		}
		g.line = append(g.line, b[:i+1]...)
		b = b[i+1:]
		g.header()
	case gBody:
		n := int64(len(b))
		if n > g.skip {
			n = g.skip
		}
		g.out = append(g.out, b[:n]...)
		b = b[n:]
		g.skip -= n
		if g.skip == 0 {
			g.remaining--
			if g.remaining == 0 {
				g.state = gFrame
			} else {
				g.state, g.line = gHeader, g.line[:0]
			}
		}
	}
	return b
}

// header handles a complete "*n\r\n" or "$n\r\n" line in g.line.
func (g *guardConn) header() {
	l := g.line
	if len(l) < 3 || l[len(l)-2] != '\r' {
		g.out = append(g.out, l...) // malformed: redcon reports it
		g.state = gPass
		return
	}
	n, err := strconv.ParseInt(string(l[1:len(l)-2]), 10, 64)
	if err != nil || (g.state == gHeader && l[0] != '$') {
		g.out = append(g.out, l...)
		g.state = gPass
		return
	}
	if g.state == gCount {
		switch {
		case n <= 0:
			g.state = gFrame // Redis ignores empty multibulks
		case n > maxArgs:
			g.tail = []byte("*-1\r\n")
			g.dead = true
		default:
			g.out = append(g.out, l...)
			g.remaining = n
			g.state, g.line = gHeader, g.line[:0]
		}
		return
	}
	if n < 0 || n > g.maxBulk {
		g.tail = []byte("$-1\r\n")
		g.dead = true
		return
	}
	g.out = append(g.out, l...)
	g.skip = n + 2
	g.state = gBody
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
