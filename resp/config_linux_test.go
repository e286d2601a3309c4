package resp

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestConfigSetTCPKeepAlive: tcp-keepalive applies to the connections
// accepted after it, as in Redis: probes after that many idle seconds, or
// none for 0.
func TestConfigSetTCPKeepAlive(t *testing.T) {
	for _, secs := range []int64{0, 77} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
				time.Sleep(time.Second)
				c.Close()
			}
		}()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		setKeepAlive(c, secs)
		on, idle := keepAliveOf(t, c.(*net.TCPConn))
		if on != (secs > 0) || (secs > 0 && idle != int(secs)) {
			t.Errorf("tcp-keepalive %d: SO_KEEPALIVE %v, TCP_KEEPIDLE %d", secs, on, idle)
		}
		c.Close()
		ln.Close()
	}
}

// keepAliveOf reads c's SO_KEEPALIVE and TCP_KEEPIDLE.
func keepAliveOf(t *testing.T, c *net.TCPConn) (on bool, idle int) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ka int
	_ = raw.Control(func(fd uintptr) {
		ka, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		idle, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
	})
	return ka != 0, idle
}
