package resp

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/raftstream/raftstream/resp/wire"
)

// The connection loop: one goroutine per client reads what the client sent
// (wire.Reader: every complete command buffered, the pipeline), hands it to
// the server, and writes the replies the server buffered in one write.

// connServer accepts connections and runs each one's loop.
type connServer struct {
	open   func(*conn) bool                            // a new connection; false refuses it
	serve  func(*conn, [][][]byte)                     // runs one pipeline
	closed func(*conn, error)                          // the connection ended
	reader func(nc net.Conn, r io.Reader) *wire.Reader // r: nc, or what reads it

	// The event loop (loop_linux.go), when Config.EventLoop is set: it
	// serves a connection while loopable says its commands may be, and
	// answer completes a pipeline served with its writes' answers deferred.
	loop     *evloop
	loopable func(*conn, [][][]byte) bool
	answer   func(*conn)

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]bool
	done  bool
}

// conn is one client connection: its socket, its request reader and its
// reply buffer. Owned by the connection's goroutine, except that another
// goroutine may close nc (CLIENT KILL, shutdown).
type conn struct {
	nc     net.Conn
	rd     *wire.Reader
	out    []byte // replies not yet written
	werr   error  // the first failed write
	addr   string
	closed bool
	client *client
	// wmu is set, by the connection's goroutine, when another goroutine
	// writes to nc too (a MONITOR connection's feed): flush takes it.
	wmu *sync.Mutex
	// lr is what rd reads through when the event loop may serve the
	// connection (nil otherwise); loopFd is its socket's fd there.
	lr     *budgetReader
	loopFd int32
	lw     *loopWriter
	noLoop bool // the event loop cannot serve it (not plain TCP)
}

// errWouldBlock: a read or write of the event loop's that would have had
// to wait.
var errWouldBlock = errors.New("resp: would block")

// budgetReader lets the event loop read a socket it knows to be readable
// once, and never wait on it: with budget 0 a Read fails with
// errWouldBlock; with budget n > 0 it reads (n-1 left); -1 is no bound (a
// connection's own goroutine).
type budgetReader struct {
	r      io.Reader
	budget int
	// pre is what the event loop received from the socket for this
	// reader (a read: it takes the budget's); again, that the loop's
	// receive found nothing to read after all.
	pre   []byte
	again bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if len(b.pre) > 0 {
		n := copy(p, b.pre)
		b.pre = b.pre[n:]
		if b.budget > 0 {
			b.budget--
		}
		return n, nil
	}
	switch {
	case b.budget == 0:
		return 0, errWouldBlock
	case b.budget > 0:
		b.budget--
	}
	return b.r.Read(p)
}

// maxKeptOut is the largest reply buffer a connection keeps once written:
// a reader of large replies (a drain's XREADGROUP COUNT 100 is ~100 KB)
// reuses its buffer instead of growing a new one per pipeline.
const maxKeptOut = 4 << 20

// writeRaw adds encoded reply bytes to the output. The replies of a
// pipeline are written together after it (the output buffer limits count
// what is waiting here).
func (c *conn) writeRaw(p []byte) { c.out = append(c.out, p...) }

// flush writes the buffered replies; after a failed write it writes
// nothing more and returns that failure.
func (c *conn) flush() error {
	if len(c.out) > 0 && c.werr == nil {
		if c.wmu != nil {
			c.wmu.Lock()
			_, c.werr = c.nc.Write(c.out)
			c.wmu.Unlock()
		} else {
			_, c.werr = c.nc.Write(c.out)
		}
	}
	if cap(c.out) > maxKeptOut {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return c.werr
}

// close writes what is buffered and closes the socket; the loop ends after
// the current pipeline.
func (c *conn) close() error {
	_ = c.flush()
	c.closed = true
	return c.nc.Close()
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
	if s.loop != nil {
		go s.loop.run()
	}
	defer func() {
		ln.Close()
		if s.loop != nil {
			s.loop.close()
		}
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
			// tight loop.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := &conn{nc: nc, addr: nc.RemoteAddr().String()}
		if s.loop != nil {
			c.lr = &budgetReader{r: nc, budget: -1}
			c.rd = s.reader(nc, c.lr)
		} else {
			c.rd = s.reader(nc, nc)
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		if s.open != nil && !s.open(c) {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.close()
			continue
		}
		if s.loop != nil && s.loop.add(c) {
			continue
		}
		go s.handle(c)
	}
}

// handle runs one connection to its end, or until it goes back to the
// event loop.
func (s *connServer) handle(c *conn) {
	if err := s.connLoop(c); err != errInLoop {
		s.finish(c, err)
	}
}

// loopReturnAfter is how many pipelines in a row the event loop could have
// served that a connection's goroutine serves before the connection goes
// back to the loop: a client that began with HELLO, AUTH or SELECT and
// then only writes is served by the loop, while one that mixes reads and
// writes keeps its goroutine instead of moving at every pipeline.
const loopReturnAfter = 8

// errInLoop ends a connection's goroutine: the event loop serves it now.
var errInLoop = errors.New("resp: served by the event loop")

// rejoin puts c back in the event loop, whose commands arrive whole
// (nothing of a command is buffered); false leaves it to its goroutine.
func (s *connServer) rejoin(c *conn) bool {
	if c.rd.Buffered() > 0 || len(c.lr.pre) > 0 {
		return false // a command is arriving: its goroutine reads it
	}
	if !s.loop.add(c) {
		c.noLoop = c.lw == nil // not a plain TCP connection: never
		return false
	}
	return true
}

// handleFrom runs a connection the event loop handed over to its end: first
// the replies the loop could not write, then cmds (read by the loop), then
// its loop.
func (s *connServer) handleFrom(c *conn, cmds [][][]byte) {
	if err := c.flush(); err != nil {
		s.finish(c, err)
		return
	}
	if cmds != nil {
		s.serve(c, cmds)
		if c.closed {
			s.finish(c, nil)
			return
		}
		if err := c.flush(); err != nil {
			s.finish(c, err)
			return
		}
	}
	s.handle(c)
}

// finish ends a connection whose loop returned err.
func (s *connServer) finish(c *conn, err error) {
	c.nc.Close()
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

// connLoop reads what the client sent, runs it, writes the replies,
// repeats. With the event loop, a connection whose last loopReturnAfter
// pipelines the loop could have served goes back to it (errInLoop).
func (s *connServer) connLoop(c *conn) error {
	mayRejoin := s.loop != nil && c.lr != nil
	plain := 0 // loopable pipelines in a row
	for {
		cmds, err := c.rd.ReadCommands()
		if err != nil {
			var perr *wire.ProtocolError
			if errors.As(err, &perr) {
				// Every protocol error gets a reply (write errors ignored).
				c.out = wire.AppendError(c.out, "ERR "+perr.Error())
				_ = c.flush()
			}
			return err
		}
		// Checked before the commands run: a write leaves the client's
		// state as it is.
		if mayRejoin && !c.noLoop && s.loopable(c, cmds) {
			plain++
		} else {
			plain = 0
		}
		s.serve(c, cmds)
		if c.closed {
			return nil
		}
		if err := c.flush(); err != nil {
			return err
		}
		if plain >= loopReturnAfter {
			if s.rejoin(c) {
				return errInLoop
			}
			plain = 0
		}
	}
}
