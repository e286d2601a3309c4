//go:build unix

package wire

import "syscall"

// Stale reports whether an idle connection can no longer carry a request:
// the peer closed or reset it (it restarted, or timed the connection out),
// or bytes nobody asked for are waiting. It looks without blocking and
// without consuming anything. A connection it cannot look into is not
// stale.
func (c *Client) Stale() bool {
	if c.r.Buffered() > 0 {
		return true
	}
	sc, ok := c.conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	stale := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// n > 0: unasked-for bytes; n == 0 without an error: the peer's
		// FIN; an error other than "nothing to read": a reset.
		stale = n > 0 || (n == 0 && rerr == nil) ||
			(rerr != nil && rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK && rerr != syscall.EINTR)
		return true
	})
	return stale || err != nil
}
