package main

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"syscall"
)

// -mode epoll is redis-server's shape in Go: one goroutine waits in
// epoll_wait on every connection's socket (non-blocking, outside Go's
// netpoller), reads what each ready client sent, writes and fdatasyncs one
// record per command for all of them, then writes every reply, and waits
// again. No goroutine parks per client and none wakes another, so the
// question it answers is what the node's front end would make without a
// goroutine per connection.

// eloop is the epoll mode's loop state.
type eloop struct {
	ep    int
	mu    sync.Mutex // conns: the accepting goroutine adds, the loop removes
	conns map[int32]*econn
	stop  chan struct{}
	done  chan struct{}
	// -overlap: the loop queues its batches in pending and tells the
	// syncer on sync.
	pmu      sync.Mutex
	pending  []part
	sync     chan struct{}
	syncDone chan struct{}
}

// econn is one client of the loop: its socket, what it sent that is not a
// whole command yet, and the replies not written yet.
type econn struct {
	fd   int
	in   []byte // the loop's
	n    int    // the loop's: whole commands read this round
	perr error  // the loop's: a protocol error, answered after the commands before it
	mu   sync.Mutex
	out  []byte // replies not written yet
	want uint32 // the epoll events asked for
	// ending: shut the socket down once out is written (an error was
	// answered); closed: the loop closed the descriptor.
	ending, closed bool
}

func (s *server) startEpoll() error {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	s.el = &eloop{ep: ep, conns: map[int32]*econn{}, stop: make(chan struct{}), done: make(chan struct{})}
	if s.overlap {
		s.el.sync, s.el.syncDone = make(chan struct{}, 1), make(chan struct{})
		go s.syncer()
	}
	go s.epollLoop()
	return nil
}

// adopt takes nc's socket out of Go's netpoller (a duplicate descriptor;
// the original closes) and into the loop's epoll set.
func (s *server) adopt(nc net.Conn) error {
	defer nc.Close()
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = syscall.Dup(int(f)) }); err != nil {
		return err
	}
	if derr != nil {
		return derr
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return err
	}
	c := &econn{fd: fd, want: syscall.EPOLLIN}
	s.el.mu.Lock()
	s.el.conns[int32(fd)] = c
	s.el.mu.Unlock()
	ev := syscall.EpollEvent{Events: c.want, Fd: int32(fd)}
	if err := syscall.EpollCtl(s.el.ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		s.el.mu.Lock()
		delete(s.el.conns, int32(fd))
		s.el.mu.Unlock()
		syscall.Close(fd)
		return err
	}
	return nil
}

// stopEpoll ends the loop and closes every connection it holds.
func (s *server) stopEpoll() {
	close(s.el.stop)
	<-s.el.done
	if s.el.syncDone != nil {
		<-s.el.syncDone
	}
	s.el.mu.Lock()
	for fd := range s.el.conns {
		syscall.Close(int(fd))
	}
	s.el.conns = nil
	s.el.mu.Unlock()
	syscall.Close(s.el.ep)
}

// part is one connection's share of a batch: its whole commands read in
// one round, and the protocol error after them if any.
type part struct {
	c    *econn
	n    int
	perr error
}

// epollLoop is the round: read every ready client, make their commands
// durable with one write and fdatasync, reply to all of them. With -overlap
// the round hands its batch to the syncer instead and waits for clients
// again while that batch's fdatasync runs.
func (s *server) epollLoop() {
	defer close(s.el.done)
	events := make([]syscall.EpollEvent, 256)
	var batch []part
	rbuf := make([]byte, 64<<10)
	for {
		select {
		case <-s.el.stop:
			return
		default:
		}
		// A bounded wait, so that stop is seen.
		nev, err := syscall.EpollWait(s.el.ep, events, 100)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		batch = batch[:0]
		for _, ev := range events[:nev] {
			s.el.mu.Lock()
			c := s.el.conns[ev.Fd]
			s.el.mu.Unlock()
			if c == nil {
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 {
				c.mu.Lock()
				s.writeOut(c)
				c.mu.Unlock()
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
				continue
			}
			if c.perr != nil {
				s.discard(c, rbuf) // answered, being shut down
				continue
			}
			if !s.readIn(c, rbuf) {
				continue
			}
			if c.n > 0 || c.perr != nil {
				batch = append(batch, part{c: c, n: c.n, perr: c.perr})
				c.n = 0
			}
		}
		if len(batch) == 0 {
			continue
		}
		if s.el.sync == nil {
			s.answer(batch, s.durable(batch))
			continue
		}
		s.el.pmu.Lock()
		s.el.pending = append(s.el.pending, batch...)
		s.el.pmu.Unlock()
		select {
		case s.el.sync <- struct{}{}:
		default: // the syncer has been told already
		}
	}
}

// syncer makes the loop's batches durable and answers them, one at a time,
// taking whatever the loop queued while the last one was written.
func (s *server) syncer() {
	defer close(s.el.syncDone)
	var batch []part
	for {
		select {
		case <-s.el.sync:
		case <-s.el.stop:
			return
		}
		s.el.pmu.Lock()
		batch, s.el.pending = s.el.pending, batch[:0]
		s.el.pmu.Unlock()
		if len(batch) > 0 {
			s.answer(batch, s.durable(batch))
			clear(batch)
		}
	}
}

// durable makes the commands of batch durable (persist).
func (s *server) durable(batch []part) error {
	total := 0
	for _, p := range batch {
		total += p.n
	}
	return s.persist(total)
}

// answer writes each part's replies: an ID per command, then its protocol
// error or the write's error, after which the connection is shut down (the
// loop closes it when it reads the end).
func (s *server) answer(batch []part, werr error) {
	for _, p := range batch {
		c := p.c
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			continue
		}
		c.out = s.appendReplies(c.out, p.n, p.perr, werr)
		if werr != nil || p.perr != nil {
			c.ending = true
		}
		s.writeOut(c)
		c.mu.Unlock()
	}
}

// readIn reads everything the socket has and counts the whole commands in
// it; false when the connection closed.
func (s *server) readIn(c *econn, rbuf []byte) bool {
	if !s.readAll(c, rbuf, true) {
		return false
	}
	rest := c.in
	for len(rest) > 0 {
		used, err := scanCommand(rest)
		if err != nil {
			c.perr = err
			rest = nil
			break
		}
		if used == 0 {
			break // not whole yet
		}
		c.n++
		rest = rest[used:]
	}
	c.in = append(c.in[:0], rest...)
	return true
}

// discard reads and drops what a connection sends after its protocol
// error, and closes it at its end.
func (s *server) discard(c *econn, rbuf []byte) { s.readAll(c, rbuf, false) }

// readAll reads what the socket has, into c.in when keep; at the
// connection's end or failure it closes it and returns false.
func (s *server) readAll(c *econn, rbuf []byte, keep bool) bool {
	for {
		n, err := syscall.Read(c.fd, rbuf)
		if n > 0 && keep {
			c.in = append(c.in, rbuf[:n]...)
		}
		switch {
		case err == syscall.EAGAIN:
			return true
		case err == syscall.EINTR:
			continue
		case err != nil || n == 0:
			s.drop(c)
			return false
		case n < len(rbuf):
			return true
		}
	}
}

// writeOut writes what it can of c.out (c.mu held), asking for EPOLLOUT
// while some remains. An ending connection is shut down once its last
// reply is out.
func (s *server) writeOut(c *econn) {
	for len(c.out) > 0 && !c.closed {
		n, err := syscall.Write(c.fd, c.out)
		if n > 0 {
			c.out = c.out[:copy(c.out, c.out[n:])]
		}
		if err == syscall.EAGAIN {
			break
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			c.out, c.ending = c.out[:0], true
		}
	}
	if c.closed {
		return
	}
	if c.ending && len(c.out) == 0 {
		syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
		return
	}
	want := uint32(syscall.EPOLLIN)
	if len(c.out) > 0 {
		want |= syscall.EPOLLOUT
	}
	if want != c.want {
		c.want = want
		ev := syscall.EpollEvent{Events: want, Fd: int32(c.fd)}
		syscall.EpollCtl(s.el.ep, syscall.EPOLL_CTL_MOD, c.fd, &ev)
	}
}

// drop closes c (the loop only): closing takes it out of the epoll set.
func (s *server) drop(c *econn) {
	s.el.mu.Lock()
	delete(s.el.conns, int32(c.fd))
	s.el.mu.Unlock()
	c.mu.Lock()
	c.closed = true
	syscall.Close(c.fd)
	c.mu.Unlock()
}

// scanCommand measures the RESP multibulk command at the start of p: its
// length, 0 when it is not whole yet, or errProtocol.
func scanCommand(p []byte) (int, error) {
	argc, off, err := scanLen(p, 0, '*')
	if err != nil || off == 0 {
		return 0, err
	}
	for range argc {
		size, next, err := scanLen(p, off, '$')
		if err != nil || next == 0 {
			return 0, err
		}
		off = next + size + 2
		if off > len(p) {
			return 0, nil
		}
	}
	return off, nil
}

// scanLen reads a "<kind><n>\r\n" line at p[off:]: n and the offset after
// it, or offset 0 when the line is not whole yet.
func scanLen(p []byte, off int, kind byte) (int, int, error) {
	i := bytes.IndexByte(p[off:], '\n')
	if i < 0 {
		if len(p)-off > 64 {
			return 0, 0, errProtocol
		}
		return 0, 0, nil
	}
	line := p[off : off+i+1]
	if len(line) < 4 || line[0] != kind || line[len(line)-2] != '\r' {
		return 0, 0, errProtocol
	}
	n := 0
	for _, b := range line[1 : len(line)-2] {
		if b < '0' || b > '9' || n > 1<<20 {
			return 0, 0, errProtocol
		}
		n = n*10 + int(b-'0')
	}
	if n > 1<<20 {
		return 0, 0, errProtocol
	}
	return n, off + i + 1, nil
}
