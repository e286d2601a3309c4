//go:build linux

package main

import (
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// loopConn is one connection of the event loop.
type loopConn struct {
	nc  net.Conn // keeps the descriptor open; replies that do not fit go through it
	fd  int
	in  []byte
	n   int // commands read and not answered yet
	out []byte
}

// eventLoop serves every connection from one goroutine, as redis-server
// does: epoll_wait, read every ready connection, one write and fdatasync
// for all their commands, then every reply.
func eventLoop(ln net.Listener, lg *logFile) error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	var conns sync.Map // fd → *loopConn
	errc := make(chan error, 1)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				errc <- err
				return
			}
			rc, err := nc.(*net.TCPConn).SyscallConn()
			if err != nil {
				nc.Close()
				continue
			}
			var fd int
			rc.Control(func(s uintptr) { fd = int(s) }) // non-blocking already
			conns.Store(fd, &loopConn{nc: nc, fd: fd})
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
			if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
				conns.Delete(fd)
				nc.Close()
			}
		}
	}()
	events := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	var (
		rec   []byte
		ready []*loopConn
		g     ids
	)
	closeConn := func(c *loopConn) {
		unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, c.fd, nil)
		conns.Delete(c.fd)
		c.nc.Close()
	}
	for {
		select {
		case err := <-errc:
			return err
		default:
		}
		k, err := unix.EpollWait(ep, events, 100)
		if err != nil && err != unix.EINTR {
			return err
		}
		rec, ready = rec[:0], ready[:0]
		for _, ev := range events[:max(k, 0)] {
			v, ok := conns.Load(int(ev.Fd))
			if !ok {
				continue
			}
			c := v.(*loopConn)
			m, err := unix.Read(c.fd, buf)
			if err == unix.EAGAIN {
				continue
			}
			if m <= 0 {
				closeConn(c)
				continue
			}
			c.in = append(c.in, buf[:m]...)
			n, used, r, err := parse(c.in, rec)
			if err != nil {
				unix.Write(c.fd, []byte("-ERR "+err.Error()+"\r\n"))
				closeConn(c)
				continue
			}
			rec = r
			c.in = c.in[:copy(c.in, c.in[used:])]
			if n > 0 {
				c.n = n
				ready = append(ready, c)
			}
		}
		if len(ready) == 0 {
			continue
		}
		if err := lg.commit(rec); err != nil {
			return err
		}
		ms := time.Now().UnixMilli()
		for _, c := range ready {
			c.out = c.out[:0]
			for range c.n {
				c.out = g.reply(c.out, ms)
			}
			c.n = 0
			if w, err := unix.Write(c.fd, c.out); err != nil || w < len(c.out) {
				// A full socket buffer: finish through net.Conn (blocking).
				rest := c.out
				if err == nil {
					rest = c.out[w:]
				}
				if _, err := c.nc.Write(rest); err != nil {
					closeConn(c)
				}
			}
		}
	}
}
