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

// Limits are the resource limits of a Server's clients (Redis's maxclients,
// timeout and maxmemory), installed by SetLimits. They are live: CONFIG SET
// changes them at run time (config.go) and the change applies at once.
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

// Defaults of a new Server's live limits: Redis's maxclients and
// tcp-keepalive.
const (
	defaultMaxClients   = 10000
	defaultTCPKeepAlive = 300 // seconds
)

// errOOM is Redis's reply to a denyoom command above maxmemory.
var errOOM = errorf("OOM command not allowed when used memory > 'maxmemory'.")

// errMaxClients is written to a connection refused by MaxClients.
const errMaxClients = "-ERR max number of clients reached\r\n"

// SetLimits installs l: the connection limits of every listener the server
// serves and the maxmemory check. It may be called at any time.
func (s *Server) SetLimits(l Limits) {
	s.conns.maxClients.Store(int64(l.MaxClients))
	s.conns.write.Store(int64(l.WriteTimeout))
	s.conns.setIdle(l.IdleTimeout)
	s.setMaxMemory(uint64(max(l.MaxMemory, 0)))
}

// connLimits are the live connection limits and the open connections they
// apply to, shared by every listener a Server serves.
type connLimits struct {
	maxClients atomic.Int64 // 0 = no limit
	idle       atomic.Int64 // ns; 0 = never
	write      atomic.Int64 // ns; 0 = never
	keepAlive  atomic.Int64 // seconds (tcp-keepalive); 0 = off
	open       atomic.Int64
	refused    atomic.Int64 // rejected_connections

	mu    sync.Mutex
	conns map[*limitConn]struct{}
}

func (l *connLimits) init() {
	l.maxClients.Store(defaultMaxClients)
	l.keepAlive.Store(defaultTCPKeepAlive)
	l.conns = map[*limitConn]struct{}{}
}

// setIdle changes the idle timeout, for the connections waiting for a
// command now as well: one idle for longer than d is closed at once.
func (l *connLimits) setIdle(d time.Duration) {
	l.idle.Store(int64(d))
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.rearm(d)
	}
}

// limitListener applies a Server's connection limits to what ln accepts.
type limitListener struct {
	net.Listener
	lim *connLimits
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n, most := l.lim.open.Add(1), l.lim.maxClients.Load(); most > 0 && n > most {
			l.lim.open.Add(-1)
			l.lim.refused.Add(1)
			// Refuse without blocking the accept loop on a slow peer (a
			// TLS client gets the error after its handshake).
			go func() {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write([]byte(errMaxClients))
				_ = c.Close()
			}()
			continue
		}
		setKeepAlive(c, l.lim.keepAlive.Load())
		lc := &limitConn{Conn: c, lim: l.lim}
		l.lim.mu.Lock()
		l.lim.conns[lc] = struct{}{}
		l.lim.mu.Unlock()
		return lc, nil
	}
}

// setKeepAlive applies tcp-keepalive to c's TCP connection, as Redis does
// for new clients: probes after secs idle seconds, every secs/3, 3 of
// them; 0 turns keepalive off.
func setKeepAlive(c net.Conn, secs int64) {
	if u, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = u.NetConn()
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if secs <= 0 {
		_ = tc.SetKeepAlive(false)
		return
	}
	d := time.Duration(secs) * time.Second
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: d, Interval: max(d/3, time.Second), Count: 3})
}

// limitConn enforces the per-connection timeouts and releases its slot in
// the client count when closed.
type limitConn struct {
	net.Conn
	lim  *connLimits
	once sync.Once
	// wdl is the write deadline last set (unix ns; 0 = none).
	wdl atomic.Int64

	// mu guards readSince: when the Read waiting for the client began
	// (zero while none waits), from which the idle timeout runs.
	mu        sync.Mutex
	readSince time.Time
}

func (c *limitConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.readSince = time.Now()
	idle := time.Duration(c.lim.idle.Load())
	if idle > 0 {
		_ = c.Conn.SetReadDeadline(c.readSince.Add(idle))
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.readSince = time.Time{}
	if idle > 0 {
		// The connection is busy until its next Read: no deadline (a
		// blocked reader still peeks at its socket: peerClosed).
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	c.mu.Unlock()
	return n, err
}

// rearm applies a new idle timeout to a Read waiting now.
func (c *limitConn) rearm(idle time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.readSince.IsZero():
	case idle > 0:
		_ = c.Conn.SetReadDeadline(c.readSince.Add(idle))
	default:
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
}

func (c *limitConn) Write(p []byte) (int, error) {
	if t := time.Duration(c.lim.write.Load()); t > 0 {
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
	c.once.Do(func() {
		c.lim.open.Add(-1)
		c.lim.mu.Lock()
		delete(c.lim.conns, c)
		c.lim.mu.Unlock()
	})
	return c.Conn.Close()
}

// memWatch samples the heap size for maxmemory (runtime/metrics, cheap, no
// stop-the-world) and keeps the verdict in an atomic for the hot path. The
// sampler runs while a limit is set.
type memWatch struct {
	max     atomic.Uint64 // 0 = no limit
	over    atomic.Bool
	used    atomic.Int64
	running atomic.Bool
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
	most := m.max.Load()
	m.over.Store(most > 0 && uint64(u) > most)
}

// setMaxMemory changes maxmemory; the next denyoom command sees the verdict
// for the new limit.
func (s *Server) setMaxMemory(v uint64) {
	m := &s.mem
	m.max.Store(v)
	m.sample()
	if v == 0 || !m.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		t := time.NewTicker(memSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.drained:
				return
			case <-t.C:
			}
			m.sample()
			if m.max.Load() == 0 {
				// Stop, unless a limit was set again meanwhile (its setter
				// found the sampler running and left it to this one).
				m.running.Store(false)
				if m.max.Load() == 0 || !m.running.CompareAndSwap(false, true) {
					return
				}
			}
		}
	}()
}

// overMaxMemory reports whether denyoom commands are refused now.
func (s *Server) overMaxMemory() bool { return s.mem.over.Load() }

// checkOOM is the -OOM error for a denyoom command above maxmemory.
func (s *Server) checkOOM(cmd *command.Command) *errReply {
	if cmd.Flags&command.FlagDenyOOM != 0 && s.overMaxMemory() {
		return errOOM
	}
	return nil
}
