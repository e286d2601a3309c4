package resp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/tidwall/redcon"
)

// connServer is redcon's connection loop (redcon.Server's serve and
// handle, same semantics and protocol errors) with a command reader that
// allocates per read, not per command: redcon's reader copied every
// command into a buffer of its own, gave it an argument slice of its own,
// grew a scratch slice of argument offsets per read, and reallocated its
// read buffer whenever a pipeline filled it. Those were a fifth of the
// server's CPU under pipelined XADDs. Replies still go through
// redcon.Writer; handlers still see redcon.Conn and redcon.Command.
type connServer struct {
	handler func(redcon.Conn, redcon.Command)
	accept  func(redcon.Conn) bool
	closed  func(redcon.Conn, error)

	mu    sync.Mutex
	ln    net.Listener
	conns map[*rconn]bool
	done  bool
}

func newConnServer(handler func(redcon.Conn, redcon.Command), accept func(redcon.Conn) bool,
	closed func(redcon.Conn, error)) *connServer {
	return &connServer{handler: handler, accept: accept, closed: closed, conns: map[*rconn]bool{}}
}

// Addr is the listener's address (nil before Serve).
func (s *connServer) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops listening; Serve then closes every connection and returns.
func (s *connServer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return errors.New("not serving")
	}
	s.done = true
	return s.ln.Close()
}

// Serve accepts connections on ln until Close or ln fails for good.
func (s *connServer) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	defer func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.conns = nil
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like: retry, but not in a
			// tight loop (redcon's did, taking a core while it lasted).
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := &rconn{nc: nc, addr: nc.RemoteAddr().String(), wr: redcon.NewWriter(nc), rd: newCmdReader(nc)}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		if s.accept != nil && !s.accept(c) {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
			continue
		}
		go s.handle(c)
	}
}

// handle runs one connection: read what the client sent, run each command
// (a handler may take the rest of the pipeline with ReadPipeline), flush
// the replies, repeat.
func (s *connServer) handle(c *rconn) {
	err := c.loop(s.handler)
	if err != errDetached {
		c.nc.Close()
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if s.closed != nil {
		if err == io.EOF {
			err = nil
		}
		s.closed(c, err)
	}
}

func (c *rconn) loop(handler func(redcon.Conn, redcon.Command)) error {
	for {
		cmds, err := c.rd.readCommands()
		if err != nil {
			var perr *errProtocol
			if errors.As(err, &perr) {
				// Every protocol error gets a reply (write errors ignored).
				c.wr.WriteError("ERR " + perr.Error())
				c.wr.Flush()
			}
			return err
		}
		c.cmds = cmds
		for len(c.cmds) > 0 {
			cmd := c.cmds[0]
			if len(c.cmds) == 1 {
				c.cmds = nil
			} else {
				c.cmds = c.cmds[1:]
			}
			handler(c, cmd)
		}
		if c.detached {
			return errDetached
		}
		if c.closed {
			return nil
		}
		if err := c.wr.Flush(); err != nil {
			return err
		}
	}
}

// rconn is one client connection (a redcon.Conn).
type rconn struct {
	nc       net.Conn
	wr       *redcon.Writer
	rd       *cmdReader
	addr     string
	ctx      any
	detached bool
	closed   bool
	cmds     []redcon.Command
}

var _ redcon.Conn = (*rconn)(nil)

func (c *rconn) Close() error {
	c.wr.Flush()
	c.closed = true
	return c.nc.Close()
}
func (c *rconn) Context() any                { return c.ctx }
func (c *rconn) SetContext(v any)            { c.ctx = v }
func (c *rconn) SetReadBuffer(int)           {}
func (c *rconn) WriteString(str string)      { c.wr.WriteString(str) }
func (c *rconn) WriteBulk(bulk []byte)       { c.wr.WriteBulk(bulk) }
func (c *rconn) WriteBulkString(bulk string) { c.wr.WriteBulkString(bulk) }
func (c *rconn) WriteInt(num int)            { c.wr.WriteInt(num) }
func (c *rconn) WriteInt64(num int64)        { c.wr.WriteInt64(num) }
func (c *rconn) WriteUint64(num uint64)      { c.wr.WriteUint64(num) }
func (c *rconn) WriteError(msg string)       { c.wr.WriteError(msg) }
func (c *rconn) WriteArray(count int)        { c.wr.WriteArray(count) }
func (c *rconn) WriteNull()                  { c.wr.WriteNull() }
func (c *rconn) WriteRaw(data []byte)        { c.wr.WriteRaw(data) }
func (c *rconn) WriteAny(v any)              { c.wr.WriteAny(v) }
func (c *rconn) RemoteAddr() string          { return c.addr }
func (c *rconn) NetConn() net.Conn           { return c.nc }
func (c *rconn) WriteBulkFrom(n int64, rb io.Reader) {
	c.wr.WriteBulkFrom(n, rb)
}

// ReadPipeline takes the commands read with the current one. They (and
// the slice) are valid until the handler returns.
func (c *rconn) ReadPipeline() []redcon.Command {
	cmds := c.cmds
	c.cmds = nil
	return cmds
}

func (c *rconn) PeekPipeline() []redcon.Command { return c.cmds }

// Detach takes the connection out of the server loop.
func (c *rconn) Detach() redcon.DetachedConn {
	c.detached = true
	cmds := c.cmds
	c.cmds = nil
	return &detachedConn{rconn: c, cmds: append([]redcon.Command(nil), cmds...)}
}

type detachedConn struct {
	*rconn
	cmds []redcon.Command
}

func (dc *detachedConn) Flush() error { return dc.wr.Flush() }

func (dc *detachedConn) ReadCommand() (redcon.Command, error) {
	for len(dc.cmds) == 0 {
		cmds, err := dc.rd.readCommands()
		if err != nil {
			return redcon.Command{}, err
		}
		dc.cmds = append(dc.cmds, cmds...)
	}
	cmd := dc.cmds[0]
	dc.cmds = dc.cmds[1:]
	return cmd, nil
}

// Protocol errors, worded as redcon (and Redis) word them.
type errProtocol struct{ msg string }

func (e *errProtocol) Error() string { return "Protocol error: " + e.msg }

var (
	errUnbalancedQuotes       = &errProtocol{"unbalanced quotes in request"}
	errInvalidBulkLength      = &errProtocol{"invalid bulk length"}
	errInvalidMultiBulkLength = &errProtocol{"invalid multibulk length"}
	errDetached               = errors.New("detached")
)

// cmdReader reads RESP and inline commands, as redcon.Reader does, with
// these differences: the commands of one read share one copy of their
// bytes and one argument slice (a copy, so handlers may keep arguments as
// before); the []Command it returns is reused by the next read; its buffer
// keeps its capacity from one read to the next (up to maxKeptReadBuf)
// instead of being reallocated by every pipeline that filled it; and once
// everything buffered was taken, the next read goes to the buffer's front.
type cmdReader struct {
	rd    *bufio.Reader
	buf   []byte
	start int
	end   int

	cmds  []redcon.Command
	marks []int // argument offsets in the read's bytes, two per argument
	spans []cmdSpan
}

// cmdSpan is one parsed RESP command: its bytes end at end, and its
// arguments' offsets are marks[m : m+2*n].
type cmdSpan struct{ end, m, n int }

const (
	minReadBuf     = 4096
	maxKeptReadBuf = 64 << 10
	maxKeptCmds    = 1024 // commands of one read whose slices a reader keeps
)

func newCmdReader(r io.Reader) *cmdReader {
	return &cmdReader{rd: bufio.NewReader(r), buf: make([]byte, minReadBuf)}
}

// readCommands returns the complete commands buffered, reading from the
// connection until there is at least one.
func (rd *cmdReader) readCommands() ([]redcon.Command, error) {
	for {
		if rd.end == rd.start {
			// Drained: read at the front again (redcon only did when the
			// buffer's end was reached, splitting the pipeline that
			// straddled it in two), keeping a buffer of modest size.
			if cap(rd.buf) > maxKeptReadBuf {
				rd.buf = make([]byte, minReadBuf)
			} else {
				rd.buf = rd.buf[:cap(rd.buf)]
			}
			rd.start, rd.end = 0, 0
		}
		cmds, err := rd.parse()
		if err != nil || len(cmds) > 0 {
			return cmds, err
		}
		if rd.end == len(rd.buf) {
			if rd.start == rd.end {
				rd.start, rd.end = 0, 0
			} else if 2*len(rd.buf) <= cap(rd.buf) {
				rd.buf = rd.buf[:2*len(rd.buf)]
			} else {
				nb := make([]byte, 2*len(rd.buf))
				copy(nb, rd.buf[:rd.end])
				rd.buf = nb
			}
		}
		n, err := rd.rd.Read(rd.buf[rd.end:])
		if err != nil {
			return nil, err
		}
		rd.end += n
	}
}

// parse takes the complete commands at the front of the buffered bytes.
func (rd *cmdReader) parse() ([]redcon.Command, error) {
	b := rd.buf[rd.start:rd.end]
	// The previous read's commands were all run: drop them (they would keep
	// that read's bytes alive), and do not keep what a bulk load grew.
	if cap(rd.cmds) > maxKeptCmds || cap(rd.marks) > 16*maxKeptCmds {
		rd.cmds, rd.marks, rd.spans = nil, nil, nil
	} else {
		clear(rd.cmds[:cap(rd.cmds)])
		rd.cmds, rd.marks, rd.spans = rd.cmds[:0], rd.marks[:0], rd.spans[:0]
	}
	// pos is where the next command starts in b; RESP commands seen since
	// the last inline one are in spans, to be cut out together.
	pos, from := 0, 0
	for pos < len(b) {
		if b[pos] != '*' {
			rd.flushSpans(b[from:pos], from)
			end, cmd, err := parseInline(b[pos:])
			if err != nil {
				return nil, err
			}
			if end < 0 {
				break
			}
			if len(cmd.Args) > 0 {
				rd.cmds = append(rd.cmds, cmd)
			}
			pos += end
			from = pos
			continue
		}
		end, n, err := rd.parseMultibulk(b[pos:], pos)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		pos += end
		rd.spans = append(rd.spans, cmdSpan{end: pos, m: len(rd.marks) - 2*n, n: n})
	}
	rd.flushSpans(b[from:pos], from)
	rd.start += pos
	return rd.cmds, nil
}

// flushSpans turns the RESP commands in spans, which are the bytes seg
// (starting at offset base of the read), into commands sharing one copy
// of seg and one argument slice.
func (rd *cmdReader) flushSpans(seg []byte, base int) {
	if len(rd.spans) == 0 {
		return
	}
	data := append([]byte(nil), seg...)
	nargs := 0
	for _, s := range rd.spans {
		nargs += s.n
	}
	args := make([][]byte, nargs)
	prev := 0
	for _, s := range rd.spans {
		argv := args[:s.n:s.n]
		args = args[s.n:]
		for i := range argv {
			a, e := rd.marks[s.m+2*i]-base, rd.marks[s.m+2*i+1]-base
			argv[i] = data[a:e:e]
		}
		end := s.end - base
		rd.cmds = append(rd.cmds, redcon.Command{Raw: data[prev:end:end], Args: argv})
		prev = end
	}
	rd.spans = rd.spans[:0]
	rd.marks = rd.marks[:0]
}

// parseMultibulk parses one "*<n>\r\n$<len>\r\n<bytes>\r\n..." command at
// the start of b (which starts at offset off of the read), appending its
// arguments' offsets to marks. n is its number of arguments, 0 if it is
// not complete yet. Checks and errors are redcon's.
func (rd *cmdReader) parseMultibulk(b []byte, off int) (end, n int, err error) {
	mark := len(rd.marks)
	for i := 1; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if b[i-1] != '\r' {
			return 0, 0, errInvalidMultiBulkLength
		}
		count, ok := parseInt(b[1 : i-1])
		if !ok || count <= 0 {
			return 0, 0, errInvalidMultiBulkLength
		}
		for j := 0; j < count; j++ {
			// read bulk length
			i++
			if i >= len(b) {
				break
			}
			if b[i] != '$' {
				return 0, 0, &errProtocol{"expected '$', got '" + string(b[i]) + "'"}
			}
			si := i
			for ; i < len(b); i++ {
				if b[i] != '\n' {
					continue
				}
				if b[i-1] != '\r' {
					return 0, 0, errInvalidBulkLength
				}
				size, ok := parseInt(b[si+1 : i-1])
				if !ok || size < 0 {
					return 0, 0, errInvalidBulkLength
				}
				if i+size+2 >= len(b) {
					// not complete
					rd.marks = rd.marks[:mark]
					return 0, 0, nil
				}
				if b[i+size+2] != '\n' || b[i+size+1] != '\r' {
					return 0, 0, errInvalidBulkLength
				}
				i++
				rd.marks = append(rd.marks, off+i, off+i+size)
				i += size + 1
				break
			}
		}
		if len(rd.marks)-mark == count*2 {
			return i + 1, count, nil
		}
		rd.marks = rd.marks[:mark]
		return 0, 0, nil
	}
	return 0, 0, nil
}

// parseInline parses one inline (telnet) command at the start of b,
// exactly as redcon does (its arguments are copies). end is -1 if its
// line is not complete; a blank line gives a command without arguments.
func parseInline(b []byte) (end int, cmd redcon.Command, err error) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		var line []byte
		if i > 0 && b[i-1] == '\r' {
			line = b[:i-1]
		} else {
			line = b[:i]
		}
		var quote bool
		var quotech byte
		var escape bool
	outer:
		for {
			nline := make([]byte, 0, len(line))
			for i := 0; i < len(line); i++ {
				c := line[i]
				if !quote {
					if c == ' ' {
						if len(nline) > 0 {
							cmd.Args = append(cmd.Args, nline)
						}
						line = line[i+1:]
						continue outer
					}
					if c == '"' || c == '\'' {
						if i != 0 {
							return 0, cmd, errUnbalancedQuotes
						}
						quotech = c
						quote = true
						line = line[i+1:]
						continue outer
					}
				} else {
					if escape {
						escape = false
						switch c {
						case 'n':
							c = '\n'
						case 'r':
							c = '\r'
						case 't':
							c = '\t'
						}
					} else if c == quotech {
						quote = false
						quotech = 0
						cmd.Args = append(cmd.Args, nline)
						line = line[i+1:]
						if len(line) > 0 && line[0] != ' ' {
							return 0, cmd, errUnbalancedQuotes
						}
						continue outer
					} else if c == '\\' {
						escape = true
						continue
					}
				}
				nline = append(nline, c)
			}
			if quote {
				return 0, cmd, errUnbalancedQuotes
			}
			if len(line) > 0 {
				cmd.Args = append(cmd.Args, line)
			}
			break
		}
		if len(cmd.Args) > 0 {
			// The raw form is the command in RESP, as redcon gives it.
			var wr redcon.Writer
			wr.WriteArray(len(cmd.Args))
			for i := range cmd.Args {
				wr.WriteBulk(cmd.Args[i])
				cmd.Args[i] = append([]byte(nil), cmd.Args[i]...)
			}
			cmd.Raw = wr.Buffer()
		}
		return i + 1, cmd, nil
	}
	return -1, cmd, nil
}

// parseInt parses a length as strconv.Atoi does (redcon's rule); plain
// digits, the usual case, without it.
func parseInt(b []byte) (int, bool) {
	if len(b) > 0 && len(b) <= 18 {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				goto slow
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
slow:
	i, err := strconv.Atoi(unsafe.String(unsafe.SliceData(b), len(b)))
	return i, err == nil
}
