package wire

import (
	"net"
	"syscall"
)

// Peek looks at a connection without blocking and without consuming
// anything: whether bytes are waiting to be read, and whether the peer
// closed or reset it. A connection it cannot look into reports neither.
func Peek(nc net.Conn) (pending, closed bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n > 0:
			pending = true
		case err == nil: // n == 0: the peer's FIN
			closed = true
		case err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR:
			closed = true // a reset
		}
		return true
	})
	return pending, closed
}

// Stale reports whether an idle connection can no longer carry a request:
// the peer closed or reset it (it restarted, or timed the connection out),
// or bytes nobody asked for are waiting.
func (c *Client) Stale() bool {
	if c.r.Buffered() > 0 {
		return true
	}
	pending, closed := Peek(c.conn)
	return pending || closed
}
