package resp

import (
	"errors"
	"net"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/resp/command"
)

// Limits are the resource limits of a Server's client side (Redis's
// maxclients, timeout, client-output-buffer-limit and maxmemory).
type Limits struct {
	// MaxClients bounds the open client connections; a connection beyond it
	// is told "-ERR max number of clients reached" and closed. 0 = no limit.
	MaxClients int
	// IdleTimeout closes a connection that sends nothing for this long
	// (Redis's timeout; a client blocked in XREAD BLOCK is not idle: it is
	// not reading). 0 = never.
	IdleTimeout time.Duration
	// WriteTimeout closes a connection whose pending output could not be
	// written for this long: a client that stops reading a huge reply is
	// disconnected instead of pinning the reply's memory (a time-based
	// complement to client-output-buffer-limit, which counts bytes:
	// limits_buf.go). 0 = never.
	WriteTimeout time.Duration
	// MaxMemory makes commands flagged denyoom (XADD, SET, XGROUP CREATE,
	// ...) fail with -OOM while the heap holds more than this many bytes;
	// reads, XACK, XDEL, XTRIM and DEL keep working so memory can be freed.
	// 0 = no limit.
	MaxMemory int64
}

// errOOM is Redis's reply to a denyoom command above maxmemory.
var errOOM = errorf("OOM command not allowed when used memory > 'maxmemory'.")

// errMaxClients is written to a connection refused by MaxClients.
const errMaxClients = "-ERR max number of clients reached\r\n"

// LimitListener applies l's connection limits (MaxClients, IdleTimeout,
// WriteTimeout) to the connections ln accepts. Listeners wrapped with the
// same shared counter (nil = a private one) share the MaxClients budget.
func LimitListener(ln net.Listener, l Limits, shared *ConnCounter) net.Listener {
	if shared == nil {
		shared = &ConnCounter{}
	}
	return &limitListener{Listener: ln, lim: l, n: shared}
}

// ConnCounter counts open client connections across listeners.
type ConnCounter struct{ n atomic.Int64 }

// Open returns the number of open connections.
func (c *ConnCounter) Open() int64 { return c.n.Load() }

type limitListener struct {
	net.Listener
	lim Limits
	n   *ConnCounter
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.lim.MaxClients > 0 && l.n.n.Add(1) > int64(l.lim.MaxClients) {
			l.n.n.Add(-1)
			// Refuse without blocking the accept loop on a slow peer.
			go func() {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write([]byte(errMaxClients))
				_ = c.Close()
			}()
			continue
		}
		if l.lim.MaxClients <= 0 {
			l.n.n.Add(1)
		}
		return &limitConn{Conn: c, lim: l.lim, n: l.n}, nil
	}
}

// limitConn enforces the per-connection timeouts and releases its slot in
// the client count when closed.
type limitConn struct {
	net.Conn
	lim  Limits
	n    *ConnCounter
	once sync.Once
	// wdl is the write deadline last set (unix ns; 0 = none).
	wdl atomic.Int64
}

func (c *limitConn) Read(p []byte) (int, error) {
	if c.lim.IdleTimeout > 0 {
		_ = c.Conn.SetReadDeadline(time.Now().Add(c.lim.IdleTimeout))
	}
	return c.Conn.Read(p)
}

func (c *limitConn) Write(p []byte) (int, error) {
	if t := c.lim.WriteTimeout; t > 0 {
		// A write may take WriteTimeout (at least 7/8 of it): the deadline
		// is moved only once it is that close, not on every reply (each
		// move is a timer update).
		dl := time.Now().Add(t).UnixNano()
		if dl-c.wdl.Load() > int64(t/8) {
			c.wdl.Store(dl)
			_ = c.Conn.SetWriteDeadline(time.Unix(0, dl))
		}
	}
	n, err := c.Conn.Write(p)
	if err != nil {
		// (ne is declared here: errors.As moves it to the heap.)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// Dropping a stalled reader: discard what the kernel still
			// holds for it (reset) rather than keep it queued.
			if tc, ok := c.Conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
	}
	return n, err
}

// SyscallConn exposes the socket (blocked readers peek at it to notice a
// client that went away).
func (c *limitConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.n.n.Add(-1) })
	return c.Conn.Close()
}

// memWatch samples the heap size for MaxMemory (runtime/metrics, cheap, no
// stop-the-world) and keeps the verdict in an atomic for the hot path.
type memWatch struct {
	max  int64
	over atomic.Bool
	used atomic.Int64
}

const memSampleEvery = 50 * time.Millisecond

var heapMetric = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapBytes is the bytes held by live and not yet swept heap objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapMetric[0].Name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

func (m *memWatch) sample() {
	u := heapBytes()
	m.used.Store(u)
	m.over.Store(m.max > 0 && u > m.max)
}

// SetLimits installs l's MaxMemory check (the connection limits are applied
// by LimitListener). Call before Serve; the sampler stops at Shutdown.
func (s *Server) SetLimits(l Limits) {
	if l.MaxMemory <= 0 {
		return
	}
	m := &memWatch{max: l.MaxMemory}
	m.sample()
	s.mem.Store(m)
	go func() {
		t := time.NewTicker(memSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.drained:
				return
			case <-t.C:
				m.sample()
			}
		}
	}()
}

// overMaxMemory reports whether denyoom commands are refused now.
func (s *Server) overMaxMemory() bool {
	m := s.mem.Load()
	return m != nil && m.over.Load()
}

// checkOOM is the -OOM error for a denyoom command above maxmemory.
func (s *Server) checkOOM(cmd *command.Command) *errReply {
	if cmd.Flags&command.FlagDenyOOM != 0 && s.overMaxMemory() {
		return errOOM
	}
	return nil
}
