package resp

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// MONITOR: a connection that sent MONITOR receives every command this node
// runs afterwards, one status line each, in Redis's format:
//
//	+1339518083.107412 [0 127.0.0.1:60866] "keys" "*"
//
// Which commands, as in Redis 7.0: those admitted (a command refused for
// its arity, authentication, permissions or keys is not shown), except the
// admin ones (CONFIG, CLIENT KILL, MONITOR ...); AUTH and HELLO AUTH show
// "(redacted)" in place of the credentials. The commands of a transaction
// are shown when EXEC runs them, before the EXEC line; MULTI and DISCARD
// when sent. A blocking read is shown once, when it blocks. Each node feeds
// its own monitors with the commands its clients send it (a command
// forwarded to another node is shown there too).
//
// Cost: while no connection monitors, one atomic load on the command path
// (the hooks word, dispatch.go). A monitor's lines are queued and written
// by a goroutine of its own, so a slow monitor never holds up a command;
// what waits for it counts against its output buffer limit
// (client-output-buffer-limit normal), past which it is disconnected, as
// any client.
//
// A monitor keeps its connection: it may still send PING, CLIENT, QUIT,
// RESET (which ends monitoring) and the like, but not keyspace commands
// ("Replica can't interact with the keyspace", as Redis answers its
// monitors). MONITOR again on a monitor is ignored, without a reply.

var errMonitorKeyspace = errorf("ERR Replica can't interact with the keyspace")

// monitors is the server's MONITOR connections. sinks is replaced, never
// changed in place, so a feed reads it under mu and iterates without it.
type monitors struct {
	mu    sync.Mutex
	sinks []*monitorSink
}

// monitorSink is one monitor's feed: the lines not yet written and the
// goroutine writing them.
type monitorSink struct {
	c     *client
	mu    sync.Mutex // guards buf
	buf   []byte
	ready chan struct{} // capacity 1: buf has lines
	done  chan struct{} // closed when the sink is removed
	// self holds the lines of the monitor's own commands (its connection's
	// goroutine only): they follow the command's reply, as in Redis, so
	// they go out with it (runOne) rather than through the writer.
	self []byte
}

func cmdMonitor(s *Server, c *client, argv [][]byte) reply {
	if c.monitor != nil {
		return nil // Redis ignores MONITOR from a monitor, without a reply
	}
	m := &monitorSink{c: c, ready: make(chan struct{}, 1), done: make(chan struct{})}
	// From now on the monitor's writer and this connection's own replies
	// share the socket: conn.flush takes the lock too.
	c.conn.wmu = new(sync.Mutex)
	c.monitor = m
	// Fed from now on: every command run after the client reads +OK is
	// shown. Its lines wait in the sink until the writer starts, after
	// +OK is written (the replies before it are already in the buffer:
	// MONITOR runs alone, after them).
	s.mon.mu.Lock()
	s.mon.sinks = append(append([]*monitorSink(nil), s.mon.sinks...), m)
	s.setHook(hookMonitor, true)
	s.mon.mu.Unlock()
	c.write(engine.OK, c.proto)
	_ = c.conn.flush() // a failed write ends the connection, and the sink with it
	go m.run()
	return nil
}

// unmonitor stops c's feed (RESET, or the connection closed).
func (s *Server) unmonitor(c *client) {
	m := c.monitor
	if m == nil {
		return
	}
	c.monitor = nil
	s.mon.mu.Lock()
	var rest []*monitorSink
	for _, x := range s.mon.sinks {
		if x != m {
			rest = append(rest, x)
		}
	}
	s.mon.sinks = rest
	if len(rest) == 0 {
		s.setHook(hookMonitor, false)
	}
	s.mon.mu.Unlock()
	close(m.done)
}

// feedMonitors sends argv, run by c, to every monitor.
func (s *Server) feedMonitors(c *client, argv [][]byte) {
	s.mon.mu.Lock()
	sinks := s.mon.sinks
	s.mon.mu.Unlock()
	if len(sinks) == 0 {
		return
	}
	line := appendMonitorLine(nil, time.Now(), c.addr, argv)
	for _, m := range sinks {
		if m.c == c {
			m.self = append(m.self, line...)
		} else {
			m.push(line)
		}
	}
}

// writeSelf appends the lines of the monitor's own last command after its
// reply.
func (m *monitorSink) writeSelf() {
	if len(m.self) > 0 {
		m.c.writeRaw(m.self)
		m.self = m.self[:0]
	}
}

// monitored reports whether MONITOR shows cmd (Redis hides admin commands).
func monitored(cmd *command.Command) bool { return cmd.Flags&command.FlagAdmin == 0 }

// push queues a line for the monitor; past its output buffer limit the
// monitor is disconnected instead.
func (m *monitorSink) push(line []byte) {
	if o := m.c.out; o != nil && !o.reserve(len(line)) {
		m.c.kill()
		return
	}
	m.mu.Lock()
	m.buf = append(m.buf, line...)
	m.mu.Unlock()
	signal(m.ready)
}

// run writes the queued lines until the sink is removed or a write fails.
func (m *monitorSink) run() {
	var out []byte
	cn := m.c.conn
	for {
		select {
		case <-m.done:
			return
		case <-m.ready:
		}
		m.mu.Lock()
		out, m.buf = m.buf, out[:0]
		m.mu.Unlock()
		cn.wmu.Lock()
		_, err := cn.nc.Write(out)
		cn.wmu.Unlock()
		if err != nil {
			m.c.kill()
			return
		}
		if cap(out) > maxKeptOut {
			out = nil
		}
	}
}

// appendMonitorLine appends Redis's monitor line for argv, run at now by
// the client at addr: "+<seconds>.<microseconds> [0 <addr>] " and each
// argument quoted as sdscatrepr does, then CRLF.
func appendMonitorLine(b []byte, now time.Time, addr string, argv [][]byte) []byte {
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	b = append(b, "000000"[len(us):]...)
	b = append(b, us...)
	b = append(b, " [0 "...)
	b = append(b, addr...)
	b = append(b, "] "...)
	redact := redactedArgs(argv)
	for i, a := range argv {
		if i > 0 {
			b = append(b, ' ')
		}
		if i < len(redact) && redact[i] {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// appendRepr is Redis's sdscatrepr: a quoted string with \\, \", \n, \r,
// \t, \a, \b escaped and other bytes outside printable ASCII as \xhh.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= ' ' && ch <= '~' {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}

// redactedArgs marks the arguments Redis hides from monitors: AUTH's
// password (and user) when it has two or three arguments, and the user and
// password after HELLO's AUTH option, as far as HELLO parses its options
// (a bad protocol version or an unknown option stops it, as in Redis).
func redactedArgs(argv [][]byte) []bool {
	switch {
	case bytes.EqualFold(argv[0], []byte("auth")):
		if len(argv) > 3 {
			return nil
		}
		out := make([]bool, len(argv))
		for i := 1; i < len(argv); i++ {
			out[i] = true
		}
		return out
	case bytes.EqualFold(argv[0], []byte("hello")) && len(argv) > 2:
		if v, ok := engine.ParseInt(argv[1]); !ok || v < 2 || v > 3 {
			return nil
		}
		var out []bool
		for j := 2; j < len(argv); j++ {
			more := len(argv) - 1 - j
			switch {
			case bytes.EqualFold(argv[j], []byte("AUTH")) && more >= 2:
				if out == nil {
					out = make([]bool, len(argv))
				}
				out[j+1], out[j+2] = true, true
				j += 2
			case bytes.EqualFold(argv[j], []byte("SETNAME")) && more >= 1:
				j++
			default:
				return out
			}
		}
		return out
	}
	return nil
}
