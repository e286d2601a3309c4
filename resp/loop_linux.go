package resp

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The event loop (Config.EventLoop): plain TCP connections that send only
// writes are served by one goroutine in Redis's shape instead of a goroutine
// each. A round reads every connection epoll reports ready, submits its
// writes, then waits for the round's writes and writes every reply; the
// round is the batch, so the shards' batchers need not wait for more
// (cmd/raftstream turns their gather off with the loop). Without pipelining,
// a goroutine per connection wakes twice per command (for the command, then
// for its reply); the loop wakes once per round. With io_uring (ring), a
// round's reads take one system call, and so do its writes.
//
// The loop never blocks on a client. A connection leaves the loop for a
// goroutine of its own as soon as it needs anything else: a command that is
// not a batchable write (a read, MULTI, a blocking command, AUTH ...), a
// command that has not fully arrived, a reply the socket cannot take at
// once, or an error on the socket; also every connection when an idle
// timeout is set, which a goroutine's reads enforce. The goroutine gives it
// back after loopReturnAfter write-only pipelines in a row (connLoop). A
// connection closed by another goroutine (CLIENT KILL, a limit, shutdown)
// is noticed by its next read, or by the loop's sweep at least once a
// second.
type evloop struct {
	s   *connServer
	epf *os.File        // the epoll fd, waited on through the netpoller
	raw syscall.RawConn // epf's: every use of the fd goes through it

	mu    sync.Mutex
	conns map[int32]*conn // by socket fd: the connections the loop owns

	// idle reports the idle timeout in force (> 0: connections go to
	// their goroutines, whose reads time out).
	idle func() time.Duration

	rounds, handoffs atomic.Uint64 // for INFO

	active       []*conn // the round's connections served so far (loop goroutine)
	answerActive func()

	// ring makes a round's receives, and its sends, in one system call
	// each (nil without io_uring: a read and a write per connection).
	// rbuf holds the round's received bytes, loopRecv per connection;
	// res and sent are per-round scratch.
	ring    *uring
	ringOn  atomic.Bool // ring != nil, for INFO
	ringErr error       // why there is no ring (nil when not wanted)
	rbuf    []byte
	res     []int32
	sent    []*conn
}

// loopRecv is what one receive of the loop takes from a connection, as
// much as a connection's goroutine reads at once (wire's minimum buffer).
const loopRecv = 16 << 10

// stats is INFO's view: the connections the loop serves, its rounds, the
// connections it handed to goroutines of their own, and whether its
// reads and writes go through io_uring.
func (l *evloop) stats() (conns int, rounds, handoffs uint64, ring bool) {
	l.mu.Lock()
	conns = len(l.conns)
	l.mu.Unlock()
	return conns, l.rounds.Load(), l.handoffs.Load(), l.ringOn.Load()
}

// loopSweep is how often the loop looks for connections closed under it
// and for an idle timeout set at run time.
const loopSweep = time.Second

func newLoop(s *connServer, idle func() time.Duration, ring bool) (*evloop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &evloop{s: s, epf: f, raw: raw, conns: map[int32]*conn{}, idle: idle}
	l.answerActive = l.answerRound
	if ring {
		if l.ring, l.ringErr = newURing(); l.ringErr != nil {
			l.ring = nil // a read and a write per connection
		}
		l.ringOn.Store(l.ring != nil)
	}
	return l, nil
}

// ringError says why the loop was asked for io_uring and got none.
func (l *evloop) ringError() error { return l.ringErr }

// ctl changes the loop's epoll set (an error once the loop is closed).
func (l *evloop) ctl(op, fd int, ev *unix.EpollEvent) error {
	var err error
	if cerr := l.raw.Control(func(epfd uintptr) { err = unix.EpollCtl(int(epfd), op, fd, ev) }); cerr != nil {
		return cerr
	}
	return err
}

// socketClosed reports whether c's socket is closed (by any goroutine).
func (c *conn) socketClosed() bool { return c.lw.sc.Control(func(uintptr) {}) != nil }

// add takes c into the loop; false leaves it to its own goroutine.
func (l *evloop) add(c *conn) bool {
	if c.lr == nil || l.idle() > 0 {
		return false
	}
	if c.lw == nil {
		if c.lw = newLoopWriter(c); c.lw == nil {
			return false // not a plain TCP connection
		}
	}
	var stale *conn
	added := false
	l.mu.Lock()
	// The socket's fd is registered while it cannot be closed (Control
	// holds it), so its number is c's throughout.
	_ = c.lw.sc.Control(func(f uintptr) {
		fd := int32(f)
		// A connection of the loop closed by another goroutine left the
		// epoll set with its socket; its fd's number may be c's now.
		if stale = l.conns[fd]; stale != nil {
			delete(l.conns, fd)
		}
		if l.ctl(unix.EPOLL_CTL_ADD, int(f), &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: fd}) == nil {
			c.loopFd, added = fd, true
			l.conns[fd] = c
		}
	})
	l.mu.Unlock()
	if stale != nil {
		l.s.finish(stale, nil)
	}
	return added
}

// release takes c out of the loop.
func (l *evloop) release(c *conn) {
	l.mu.Lock()
	if l.conns[c.loopFd] == c {
		delete(l.conns, c.loopFd)
		// Fails when the socket was closed, which took it out of the set
		// (its fd's number may be another connection's by now).
		_ = c.lw.sc.Control(func(f uintptr) { _ = l.ctl(unix.EPOLL_CTL_DEL, int(f), nil) })
	}
	l.mu.Unlock()
	c.lr.budget = -1
}

// handOff moves c to a goroutine of its own, which first runs cmds (read by
// the loop, not yet served) and writes what c.out holds.
func (l *evloop) handOff(c *conn, cmds [][][]byte) {
	l.handoffs.Add(1)
	l.release(c)
	if len(c.lr.pre) > 0 {
		// Received by the loop, not yet read: out of the loop's buffer.
		c.lr.pre = append([]byte(nil), c.lr.pre...)
	}
	go l.s.handleFrom(c, cmds)
}

// drop ends c (its socket failed or was closed).
func (l *evloop) drop(c *conn, err error) {
	l.release(c)
	l.s.finish(c, err)
}

// run serves the loop's connections until the loop is closed, then ends
// the ones it still owns.
func (l *evloop) run() {
	defer func() {
		if l.ring != nil {
			l.ring.close()
			l.ringOn.Store(false)
		}
		l.mu.Lock()
		left := make([]*conn, 0, len(l.conns))
		for _, c := range l.conns {
			left = append(left, c)
		}
		l.mu.Unlock()
		for _, c := range left {
			l.drop(c, nil)
		}
	}()
	events := make([]unix.EpollEvent, 128)
	var ready, active []*conn
	n := 0
	wait := func(epfd uintptr) bool {
		var err error
		for {
			n, err = unix.EpollWait(int(epfd), events, 0)
			if err != unix.EINTR {
				break
			}
		}
		return n > 0
	}
	nextSweep := time.Now().Add(loopSweep)
	_ = l.epf.SetReadDeadline(nextSweep)
	for {
		n = 0
		err := l.raw.Read(wait)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed
		}
		if err != nil || time.Now().After(nextSweep) { // err: the sweep's deadline
			l.sweep()
			nextSweep = time.Now().Add(loopSweep)
			_ = l.epf.SetReadDeadline(nextSweep)
		}
		ready = ready[:0]
		l.mu.Lock()
		for i := range n {
			if c := l.conns[events[i].Fd]; c != nil {
				ready = append(ready, c)
			}
		}
		l.mu.Unlock()
		if len(ready) > 0 {
			l.rounds.Add(1)
		}
		active = l.round(ready, active[:0])
		clear(ready)
		clear(active)
	}
}

// round reads and submits the ready connections' commands, then answers
// them and writes the replies. It returns active (emptied) for reuse.
func (l *evloop) round(ready, active []*conn) []*conn {
	if l.ring != nil {
		l.receive(ready)
	}
	for _, c := range ready {
		if c.lr.again {
			c.lr.again = false // nothing to read after all
			continue
		}
		c.lr.budget = 1 // the socket is readable: one read never blocks
		cmds, err := c.rd.ReadCommands()
		c.lr.budget = 0
		switch {
		case errors.Is(err, errWouldBlock):
			l.handOff(c, nil) // a command that has not fully arrived
			continue
		case err != nil:
			// EOF, a reset, a protocol error: the goroutine's loop
			// reads it again and ends the connection as usual.
			l.handOff(c, nil)
			continue
		case !l.s.loopable(c, cmds) || len(c.lr.pre) > 0:
			// (Or the reader did not take all the loop received.)
			l.handOff(c, cmds)
			continue
		}
		l.active = active
		c.client.beforeBlock = l.answerActive
		c.client.deferAnswer = true
		l.s.serve(c, cmds)
		c.client.deferAnswer, c.client.beforeBlock = false, nil
		active = append(active, c)
	}
	l.answer(active)
	l.active = nil
	return active[:0]
}

// answerRound answers the round's connections served so far: a
// connection's runPipeline calls it before it waits for a permit that only
// those answers release (client.beforeBlock).
func (l *evloop) answerRound() { l.answer(l.active) }

// answer waits for the writes the active connections submitted and writes
// their replies (each only once: answered ones become nil): with the ring,
// every reply in one system call. A connection whose reply the socket
// cannot take at once, or whose socket failed, leaves the loop.
func (l *evloop) answer(active []*conn) {
	sent := l.sent[:0]
	for i, c := range active {
		if c == nil {
			continue
		}
		l.s.answer(c)
		active[i] = nil
		switch {
		case c.closed:
			l.drop(c, nil)
		case c.werr != nil:
			l.drop(c, c.werr)
		case len(c.out) > 0:
			sent = append(sent, c)
		}
	}
	if l.ring != nil && len(sent) > 0 {
		res := l.resFor(len(sent))
		err := l.ring.each(uringOpSend, sent, func(i int) []byte { return sent[i].out }, res)
		for i, c := range sent {
			if res[i] == closedRes {
				l.drop(c, nil) // closed under the loop
			} else {
				l.wrote(c, c.sent(res[i]))
			}
		}
		l.ringFailed(err)
	} else {
		for _, c := range sent {
			l.wrote(c, c.writeNow())
		}
	}
	clear(sent)
	l.sent = sent[:0]
}

// wrote acts on the outcome of c's write: a reply the socket did not take
// at once goes with c to its goroutine; a failed socket ends c.
func (l *evloop) wrote(c *conn, err error) {
	switch {
	case errors.Is(err, errWouldBlock):
		l.handOff(c, nil) // its goroutine writes the rest first
	case err != nil:
		l.drop(c, err)
	}
}

// receive makes one receive from each ready connection in one system call;
// each one's reader then reads what it received (budgetReader.pre). A
// connection with nothing to receive after all is skipped this round
// (again); a socket closed, at EOF or in error is left to the plain read,
// which sees the same.
func (l *evloop) receive(ready []*conn) {
	if need := len(ready) * loopRecv; len(l.rbuf) < need {
		l.rbuf = make([]byte, need)
	}
	buf := func(i int) []byte { return l.rbuf[i*loopRecv : (i+1)*loopRecv : (i+1)*loopRecv] }
	res := l.resFor(len(ready))
	err := l.ring.each(uringOpRecv, ready, buf, res)
	for i, c := range ready {
		switch {
		case res[i] > 0:
			c.lr.pre = buf(i)[:res[i]]
		case res[i] == -int32(unix.EAGAIN):
			c.lr.again = true
		case res[i] == -int32(unix.EIO) && err != nil:
			// Unknown: whatever it received is lost to the reader.
			c.lr.again = true
			l.drop(c, err)
		}
	}
	l.ringFailed(err)
}

// resFor returns the round's scratch for n results of the ring.
func (l *evloop) resFor(n int) []int32 {
	if cap(l.res) < n {
		l.res = make([]int32, n)
	}
	return l.res[:n]
}

// ringFailed gives up the ring after an error of its own (not of a
// socket's): the loop reads and writes each connection itself from then on.
func (l *evloop) ringFailed(err error) {
	if err != nil {
		l.ring.close()
		l.ring = nil
		l.ringOn.Store(false)
	}
}

// sweep ends the connections closed under the loop and, when an idle
// timeout is in force, hands every connection to its goroutine.
func (l *evloop) sweep() {
	idle := l.idle() > 0
	l.mu.Lock()
	var gone, out []*conn
	for _, c := range l.conns {
		switch {
		case c.socketClosed():
			gone = append(gone, c)
		case idle:
			out = append(out, c)
		}
	}
	l.mu.Unlock()
	for _, c := range gone {
		l.drop(c, nil)
	}
	for _, c := range out {
		l.handOff(c, nil)
	}
}

// close stops the loop; run ends the connections it still owns.
func (l *evloop) close() { l.epf.Close() }

// loopWriter makes the event loop's non-blocking writes to a connection's
// socket (made once per connection: the raw conn and the write function).
type loopWriter struct {
	c   *conn
	sc  syscall.RawConn
	fn  func(fd uintptr) bool
	n   int
	err error
}

func newLoopWriter(c *conn) *loopWriter {
	w := &loopWriter{c: c}
	for nc := c.nc; w.sc == nil; {
		switch x := nc.(type) {
		case *limitConn:
			nc = x.Conn
		case *outConn:
			nc = x.Conn
		case *net.TCPConn:
			sc, err := x.SyscallConn()
			if err != nil {
				return nil
			}
			w.sc = sc
		default:
			return nil
		}
	}
	w.fn = w.write
	return w
}

func (w *loopWriter) write(fd uintptr) bool {
	for {
		w.n, w.err = syscall.Write(int(fd), w.c.out)
		if w.err != syscall.EINTR {
			return true
		}
	}
}

// writeNow writes c.out with one non-blocking write: errWouldBlock when the
// socket took part of it (the rest stays in c.out).
func (c *conn) writeNow() error {
	if len(c.out) == 0 || c.werr != nil {
		return c.werr
	}
	w := c.lw
	if w == nil {
		return errWouldBlock
	}
	w.n, w.err = 0, nil
	if err := w.sc.Write(w.fn); err != nil {
		c.werr = err
		return err
	}
	return c.afterWrite(w.n, w.err)
}

// sent is afterWrite for a send the ring made: res is its bytes or -errno.
func (c *conn) sent(res int32) error {
	if res < 0 {
		return c.afterWrite(0, syscall.Errno(-res))
	}
	return c.afterWrite(int(res), nil)
}

// afterWrite drops the n bytes a write took from c.out, and from the
// client's output buffer count (the write bypassed outConn.Write):
// errWouldBlock when it took only part of them (or none: EAGAIN), err for a
// failed socket.
func (c *conn) afterWrite(n int, err error) error {
	if n > 0 {
		c.out = c.out[:copy(c.out, c.out[n:])]
		if c.client != nil && c.client.out != nil {
			c.client.out.took(n)
		}
	}
	switch {
	case err == syscall.EAGAIN || (err == nil && len(c.out) > 0):
		return errWouldBlock
	case err != nil:
		c.werr = err
		return err
	}
	if cap(c.out) > maxKeptOut {
		c.out = nil
	}
	return nil
}
