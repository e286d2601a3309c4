package resp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
)

// Client buffer limits (Redis's client-query-buffer-limit and
// client-output-buffer-limit for the normal class), changeable at run time
// with CONFIG SET.
//
// Query buffer: the bytes of the one command a connection has begun and not
// finished sending (the reader must hold all of them before it can hand the
// command over). Above the limit the connection is closed without a reply, as
// Redis does ("closing client that reached max query buffer length"); a
// client sending an endless multibulk cannot grow the server's memory.
// Default 1gb, as Redis.
//
// Output buffer: the reply bytes produced for a connection and not yet
// written to its socket (replies of a pipeline accumulate until the
// pipeline is flushed; a client that does not read keeps them pending).
// Above the hard limit, or above the soft limit for soft-seconds without
// interruption, the connection is closed and what it had pending dropped.
// Redis's default for normal clients is no limit; raftstream's is
// "normal 1gb 256mb 60", so a client that pipelines huge XRANGEs and stops
// reading cannot hold more than a gigabyte of replies, while a reader that
// keeps up is never cut off. CONFIG SET client-output-buffer-limit "normal
// 0 0 0" restores Redis's behaviour. The time-based Limits.WriteTimeout
// (--client-output-timeout) applies as well.
const (
	defaultQueryBufferLimit = 1 << 30
	minQueryBufferLimit     = 1 << 20 // Redis refuses less than 1mb
	defaultOutputHard       = 1 << 30
	defaultOutputSoft       = 256 << 20
	defaultOutputSoftSecs   = 60
)

// Redis's (unenforced here) defaults for the replica and pubsub classes,
// kept so that CONFIG GET shows, and CONFIG SET round-trips, all three.
var defaultOtherClasses = map[string][3]int64{
	"slave":  {256 << 20, 64 << 20, 60},
	"pubsub": {32 << 20, 8 << 20, 60},
}

// bufLimits holds the live limits and the disconnect counters.
type bufLimits struct {
	query                atomic.Int64 // 0 = no limit
	outHard, outSoft     atomic.Int64 // 0 = no limit
	outSoftSecs          atomic.Int64
	queryDrops, outDrops atomic.Int64
	mu                   sync.Mutex
	other                map[string][3]int64 // slave, pubsub (reported only)
	log                  func(msg string, args ...any)
}

func (b *bufLimits) init(log func(string, ...any)) {
	b.query.Store(defaultQueryBufferLimit)
	b.outHard.Store(defaultOutputHard)
	b.outSoft.Store(defaultOutputSoft)
	b.outSoftSecs.Store(defaultOutputSoftSecs)
	b.other = map[string][3]int64{}
	for k, v := range defaultOtherClasses {
		b.other[k] = v
	}
	b.log = log
}

// queryOver is called by the reader with the size of the command being
// received; true means close the connection (counted and logged once).
func (b *bufLimits) queryOver(cur int64, c net.Conn) bool {
	if b == nil {
		return false
	}
	lim := b.query.Load()
	if lim <= 0 || cur <= lim {
		return false
	}
	b.queryDrops.Add(1)
	if b.log != nil {
		var remote net.Addr
		if c != nil {
			remote = c.RemoteAddr()
		}
		b.log("closing client that reached max query buffer length", "addr", addrString(remote), "qbuf", cur, "limit", lim)
	}
	return true
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// outConn counts a connection's reply bytes not yet written to its socket
// and enforces the output buffer limit. client.write adds what it appends
// to the connection's buffer (reserve); Write, called by its flush, writes in
// chunks and subtracts what reached the socket.
type outConn struct {
	net.Conn
	lim     *bufLimits
	pending atomic.Int64
	// over is set once the limit was exceeded: the connection is being
	// closed and further replies are dropped.
	over atomic.Bool
	// softGen identifies the current stretch above the soft limit (0 =
	// below); a timer per stretch closes the connection if it is still the
	// same stretch soft-seconds later.
	mu      sync.Mutex
	softGen uint64
	nextGen uint64
}

// outChunk is how much one Write hands to the socket at a time, so the
// pending count follows a slow reader's progress.
const outChunk = 64 << 10

// errOutputBufferLimit is returned by Write on a connection dropped for its
// output buffer.
var errOutputBufferLimit = errors.New("client reached its output buffer limit")

// reserve accounts n more pending bytes before they are appended; false
// means the connection went over its limit (it is being closed: drop the
// reply).
func (o *outConn) reserve(n int) bool {
	if o.over.Load() {
		return false
	}
	p := o.pending.Add(int64(n))
	if hard := o.lim.outHard.Load(); hard > 0 && p > hard {
		o.drop(fmt.Sprintf("hard limit %d", hard), p)
		return false
	}
	o.checkSoft(p)
	return true
}

// checkSoft starts or ends a stretch above the soft limit.
func (o *outConn) checkSoft(p int64) {
	soft, secs := o.lim.outSoft.Load(), o.lim.outSoftSecs.Load()
	o.mu.Lock()
	defer o.mu.Unlock()
	if soft <= 0 || p <= soft {
		o.softGen = 0
		return
	}
	if o.softGen != 0 {
		return
	}
	o.nextGen++
	gen := o.nextGen
	o.softGen = gen
	time.AfterFunc(time.Duration(secs)*time.Second, func() {
		o.mu.Lock()
		still := o.softGen == gen
		o.mu.Unlock()
		if still {
			o.drop(fmt.Sprintf("soft limit %d for %ds", soft, secs), o.pending.Load())
		}
	})
}

// drop closes the connection for its output buffer (once): the socket is
// reset so the kernel discards what it still queues for the peer.
func (o *outConn) drop(why string, pending int64) {
	if o.over.Swap(true) {
		return
	}
	o.lim.outDrops.Add(1)
	if o.lim.log != nil {
		o.lim.log("closing client that reached its output buffer limit", "addr", addrString(o.RemoteAddr()), "omem", pending, "limit", why)
	}
	if tc := tcpConnOf(o.Conn); tc != nil {
		_ = tc.SetLinger(0)
	}
	_ = o.Conn.Close()
}

// tcpConnOf finds the TCP socket under the listener wrappers.
func tcpConnOf(c net.Conn) *net.TCPConn {
	for i := 0; i < 8 && c != nil; i++ {
		switch x := c.(type) {
		case *net.TCPConn:
			return x
		case *limitConn:
			c = x.Conn
		case interface{ NetConn() net.Conn }: // *tls.Conn
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// Write writes p (the connection's flush) in chunks, releasing the pending count
// as bytes reach the socket.
func (o *outConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		if o.over.Load() {
			return written, errOutputBufferLimit
		}
		n := min(len(p)-written, outChunk)
		m, err := o.Conn.Write(p[written : written+n])
		written += m
		o.took(m)
		if err != nil {
			if o.over.Load() {
				err = errOutputBufferLimit
			}
			return written, err
		}
	}
	return written, nil
}

// took releases n pending bytes that reached the socket.
func (o *outConn) took(n int) { o.checkSoft(o.pending.Add(-int64(n))) }

// Pending is the reply bytes not yet written (CLIENT LIST omem).
func (o *outConn) Pending() int64 {
	if o == nil {
		return 0
	}
	return max(o.pending.Load(), 0)
}

// SyscallConn exposes the socket (blocked readers peek at it).
func (o *outConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := o.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// outListener wraps accepted connections in outConn.
type outListener struct {
	net.Listener
	lim *bufLimits
}

func (l outListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &outConn{Conn: c, lim: l.lim}, nil
}

// parseMemory is engine.ParseMemory for a limit kept as an int64: a value
// past int64 is refused.
func parseMemory(s string) (int64, bool) {
	v, ok := engine.ParseMemory([]byte(s))
	return int64(v), ok && v <= math.MaxInt64
}

// outputLimitString is CONFIG GET client-output-buffer-limit.
func (b *bufLimits) outputLimitString() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	sl, ps := b.other["slave"], b.other["pubsub"]
	return fmt.Sprintf("normal %d %d %d slave %d %d %d pubsub %d %d %d",
		b.outHard.Load(), b.outSoft.Load(), b.outSoftSecs.Load(), sl[0], sl[1], sl[2], ps[0], ps[1], ps[2])
}

// setOutputLimit parses CONFIG SET client-output-buffer-limit's value
// ("<class> <hard> <soft> <soft-seconds>" repeated) and returns a function
// applying it, or Redis's error.
func (b *bufLimits) setOutputLimit(v string) (func(), *errReply) {
	bad := errorf("ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration.")
	if v == "" {
		return func() {}, nil // no class: nothing changes, as in Redis
	}
	f := strings.Fields(v)
	if len(f) == 0 || len(f)%4 != 0 {
		return nil, bad
	}
	type class struct {
		name string
		v    [3]int64
	}
	var cs []class
	for i := 0; i < len(f); i += 4 {
		name := strings.ToLower(f[i])
		switch name {
		case "normal", "slave", "replica", "pubsub":
		default:
			return nil, errorf("ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration.")
		}
		if name == "replica" {
			name = "slave"
		}
		hard, ok1 := parseMemory(f[i+1])
		soft, ok2 := parseMemory(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil || secs < 0 {
			return nil, errorf("ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		cs = append(cs, class{name, [3]int64{hard, soft, secs}})
	}
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range cs {
			if c.name == "normal" {
				b.outHard.Store(c.v[0])
				b.outSoft.Store(c.v[1])
				b.outSoftSecs.Store(c.v[2])
				continue
			}
			b.other[c.name] = c.v
		}
	}, nil
}

// set parses a CONFIG SET value of one of the two parameters.
func (b *bufLimits) set(name, v string) (func(), *errReply) {
	if name == "client-query-buffer-limit" {
		return b.setQueryLimit(v)
	}
	return b.setOutputLimit(v)
}

// setQueryLimit parses CONFIG SET client-query-buffer-limit's value.
func (b *bufLimits) setQueryLimit(v string) (func(), *errReply) {
	n, why := engine.ParseMemoryArg([]byte(v), minQueryBufferLimit, math.MaxInt64)
	if why != "" {
		return nil, engine.ConfigFailed("client-query-buffer-limit", why)
	}
	return func() { b.query.Store(int64(n)) }, nil
}

// readRunBounded runs a run of plain reads on one shard like readUnit, but
// stops once the replies would take the connection past its hard output
// limit: the rest of the run is not executed (they are reads: nothing is
// lost) and ran counts those that were; writing the reply that crossed the
// limit closes the connection. Without this a pipeline of huge reads would
// hold every reply in memory at once, whatever the limit.
func (s *Server) readRunBounded(c *client, shard, slot int, unit [][][]byte) (out []reply, ran int, er reply) {
	var budget int64 // 0 = no limit
	if hard := s.buf.outHard.Load(); hard > 0 && c.out != nil {
		budget = max(hard-c.out.Pending(), 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	out = make([]reply, len(unit))
	err := s.be.ReadChecked(ctx, shard, c.readonly, func(e *engine.Engine, check fsm.Checker) {
		now := e.ReadTime(nowMs())
		var total int64
		ran = 0
		for i, argv := range unit {
			if out[i] = check(argv, false); out[i] == nil {
				out[i] = e.Exec(now, argv)
			}
			ran++
			if budget > 0 {
				if total += replySize(out[i]); total > budget {
					return
				}
			}
		}
	})
	if err != nil {
		return nil, 0, s.mapReadError(err, slot)
	}
	for i := range out[:ran] {
		out[i] = s.redirect(out[i], slot) // outside the read: needs the topology
	}
	return out, ran, nil
}

// replySize is a lower bound of r's encoded size (RESP2 or RESP3),
// computed without encoding it: a run stopped on it has surely passed the
// limit.
func replySize(r reply) int64 {
	switch v := r.(type) {
	case engine.BulkString:
		return int64(len(v)) + 6 // "$0\r\n" + payload + "\r\n"
	case engine.SimpleString:
		return int64(len(v)) + 3
	case *engine.Error:
		return int64(len(v.Msg)) + 3
	case engine.Array:
		return listSize(v)
	case *engine.EntryReply:
		return int64(4+4+6+20) + int64(len(v.Enc)) // "*2", the fields' header, the ID's bulk
	case engine.Map:
		return listSize(v)
	case engine.PairMap:
		return listSize(v) // RESP3 has no per-pair header
	case engine.Set:
		return listSize(v)
	}
	return 3 // the shortest reply, "_\r\n"
}

func listSize(l []reply) int64 {
	n := int64(4) // "*0\r\n"
	for _, e := range l {
		n += replySize(e)
	}
	return n
}

// dropForOutput closes c for its output buffer if writing the replies did
// not already (a safety net: replySize never overestimates).
func (c *client) dropForOutput() {
	if c.isClosed() {
		return
	}
	if c.out != nil {
		c.out.drop("hard limit (read run)", c.out.Pending())
	}
	c.close()
}
