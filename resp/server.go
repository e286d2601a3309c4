package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/acl"
	"github.com/raftstream/raftstream/resp/command"
	"github.com/raftstream/raftstream/resp/wire"
)

type (
	reply    = engine.Reply
	errReply = engine.Error
)

func errorf(format string, args ...any) *errReply { return engine.Errorf(format, args...) }

// Config configures a Server.
type Config struct {
	// RequirePass, when set, makes every connection authenticate (AUTH or
	// HELLO AUTH) before other commands (Redis's requirepass).
	RequirePass string
	// ProtoMaxBulkLen is the largest accepted argument in bytes (Redis's
	// proto-max-bulk-len). Default 512MB.
	ProtoMaxBulkLen int64
	// ClusterMode makes the server present itself as a Redis Cluster node
	// (HELLO mode, INFO cluster_enabled, READONLY/ASKING accepted).
	ClusterMode bool
	// Forwarding makes the server relay commands for shards led elsewhere
	// to their leader instead of answering MOVED, for clients that are not
	// cluster-aware (see forward.go). Keyspace fan-out commands (DBSIZE,
	// KEYS, SCAN, FLUSHALL) still cover only the shards this node leads.
	Forwarding bool
	// WriteTimeout bounds how long a client waits for a write to commit
	// before it is told the outcome is unknown. Default 30s.
	WriteTimeout time.Duration
	// MaxInFlight bounds the pipelined write submissions (a run of a
	// connection's consecutive writes to one shard is one submission) to
	// one shard not yet answered, across all connections; past it connections wait
	// (and stop reading) instead of overflowing the shard's queue. Default
	// 4096 (fsm's queue holds 8192).
	MaxInFlight int
	// EventLoop serves plain TCP connections that send only writes from
	// one goroutine in Redis's shape (read every ready connection, submit,
	// answer, write) instead of a goroutine each (loop_linux.go). Linux
	// only.
	EventLoop bool
	// EventLoopSyscalls makes the event loop read and write each
	// connection with a system call of its own; by default a round's reads,
	// and its writes, go in one io_uring call each where the kernel allows
	// io_uring (uring_linux.go).
	EventLoopSyscalls bool
	// Logger receives connection-level logs. Nil means discard.
	Logger *slog.Logger
	// Port is reported by INFO (tcp_port) and CONFIG GET port.
	Port int
	// Bind and Dir are reported by CONFIG GET.
	Bind, Dir string
	// LogLevel, when set, is the level of the node's logger, which CONFIG
	// SET loglevel changes (config.go). Nil: the level is reported but
	// changes nothing.
	LogLevel *slog.LevelVar
	// GoDebug is reported by INFO (go_godebug): the process's GODEBUG, as
	// cmd/raftstream read it from the environment.
	GoDebug string
}

// DefaultConfig returns Redis's defaults.
func DefaultConfig() Config {
	return Config{ProtoMaxBulkLen: 512 << 20, WriteTimeout: 30 * time.Second, MaxInFlight: 4096,
		Port: 6379, Bind: "127.0.0.1"}
}

// Server is the RESP front end of a node: it owns connections and their
// state, routes each command by the command table, and never holds
// replicated state itself.
type Server struct {
	cfg Config
	be  Backend
	log *slog.Logger
	rs  *connServer

	started time.Time
	nextID  atomic.Int64

	mu      sync.Mutex
	clients map[int64]*client

	acl      *acl.Store                      // users (acl.go)
	aclLog   acl.Log                         // ACL LOG
	aclSync  aclSync                         // replay of replicated ACL changes (acl_repl.go)
	conns    connLimits                      // live connection limits (limits.go)
	mem      memWatch                        // maxmemory verdict (limits.go)
	buf      bufLimits                       // client query/output buffer limits (limits_buf.go)
	maxBulk  atomic.Int64                    // proto-max-bulk-len in force
	slow     slowLog                         // SLOWLOG (slowlog.go)
	lat      latencyMonitor                  // LATENCY (latency.go)
	fwd      *forwarder                      // nil unless Config.Forwarding
	sems     atomic.Pointer[[]chan struct{}] // per shard: pipelined writes in flight (MaxInFlight); semFor
	semMu    sync.Mutex                      // serialises growing sems
	waiters  *waiters
	nBlocked atomic.Int64  // connections currently waiting in a blocking read
	cmdm     *cmdMetrics   // per-command counts and latencies (metrics_cmds.go)
	hooks    atomic.Uint32 // hookMonitor, hookPause: what watches admitted commands (dispatch.go)
	mon      monitors      // MONITOR connections (monitor.go)
	pause    pauseState    // CLIENT PAUSE (client_cmds.go)
	backups  atomic.Int32  // open RAFTSTREAM BACKUP sessions (backup.go)
	save     saveState     // SAVE and BGSAVE (save.go)

	// draining is set by Shutdown; inflight counts command batches being
	// executed so that Shutdown can let them finish.
	drainMu  sync.RWMutex
	draining bool
	inflight sync.WaitGroup
	drained  chan struct{}

	stats struct {
		connections atomic.Int64
		commands    atomic.Int64
		rejected    atomic.Int64
	}
}

// New returns a server for backend be. It installs be's notify callback.
func New(be Backend, cfg Config) *Server {
	d := DefaultConfig()
	if cfg.ProtoMaxBulkLen <= 0 {
		cfg.ProtoMaxBulkLen = d.ProtoMaxBulkLen
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = d.WriteTimeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = d.MaxInFlight
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.LogLevel == nil {
		cfg.LogLevel = new(slog.LevelVar)
	}
	s := &Server{cfg: cfg, be: be, log: log, started: time.Now(), clients: map[int64]*client{},
		waiters: newWaiters(), drained: make(chan struct{})}
	s.acl = acl.NewStore(cfg.RequirePass)
	s.buf.init(log.Warn)
	s.conns.init()
	s.slow.init()
	s.maxBulk.Store(cfg.ProtoMaxBulkLen)
	if cfg.Forwarding {
		s.fwd = newForwarder(cfg.RequirePass)
	}
	s.sems.Store(&[]chan struct{}{})
	s.cmdm = newCmdMetrics()
	be.SetNotify(s.waiters.notify)
	return s
}

// Serve accepts connections on ln until Shutdown or Close, with the server's
// connection limits (SetLimits) applied to them. It returns nil after a
// shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.rs = &connServer{open: s.accept, serve: s.serve, closed: s.closed, reader: s.newReader, conns: map[*conn]bool{},
		loopable: s.loopable, answer: s.answerDeferred}
	if s.cfg.EventLoop {
		l, err := newLoop(s.rs, func() time.Duration { return time.Duration(s.conns.idle.Load()) }, !s.cfg.EventLoopSyscalls)
		if err != nil {
			s.log.Warn("event loop unavailable: every connection has its goroutine", "err", err)
		} else {
			s.rs.loop = l
			if err := l.ringError(); err != nil {
				s.log.Warn("io_uring unavailable: the event loop reads and writes each connection with system calls of its own", "err", err)
			}
		}
	}
	rs := s.rs
	s.mu.Unlock()
	ln = outListener{Listener: &limitListener{Listener: ln, lim: &s.conns}, lim: &s.buf}
	return rs.Serve(&drainListener{Listener: ln, drained: s.drained})
}

// newReader is a connection's request reader, with the server's protocol
// limits: proto-max-bulk-len and client-query-buffer-limit.
func (s *Server) newReader(nc net.Conn, r io.Reader) *wire.Reader {
	return wire.NewReader(r, wire.Limits{
		MaxBulkLive: &s.maxBulk,
		QueryOver:   func(pending int64) bool { return s.buf.queryOver(pending, nc) },
	})
}

// Shutdown stops accepting connections, lets command batches in flight
// finish (bounded by ctx), then closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.drainMu.Lock()
	already := s.draining
	s.draining = true
	s.drainMu.Unlock()
	if already {
		return nil
	}
	s.mu.Lock()
	rs := s.rs
	s.mu.Unlock()
	// Blocked reads would wait forever: wake them first (they end without a
	// reply; their connections are closed below). Commands held by CLIENT
	// PAUSE run now.
	s.waiters.closeAll()
	s.pause.end()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if s.fwd != nil {
		s.fwd.close()
	}
	close(s.drained)
	if rs != nil {
		_ = rs.Close()
	}
	return err
}

// drainListener delays reporting the listener's closure to connServer (which
// then closes every connection) until in-flight batches have finished.
type drainListener struct {
	net.Listener
	drained chan struct{}
	once    sync.Once
}

func (l *drainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && errors.Is(err, net.ErrClosed) {
		<-l.drained
	}
	return c, err
}

func (l *drainListener) Close() error {
	var err error
	l.once.Do(func() { err = l.Listener.Close() })
	return err
}

// Addr is the address the server listens on (after Serve started).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rs == nil {
		return nil
	}
	return s.rs.Addr()
}

func (s *Server) accept(cn *conn) bool {
	s.drainMu.RLock()
	draining := s.draining
	s.drainMu.RUnlock()
	if draining {
		return false
	}
	c := newClient(s.nextID.Add(1), cn)
	c.out, _ = cn.nc.(*outConn)
	c.user = s.acl.DefaultAuto()
	c.authed = c.user != nil
	cn.client = c
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
	s.stats.connections.Add(1)
	return true
}

func (s *Server) closed(cn *conn, err error) {
	c := cn.client
	if c == nil {
		return
	}
	c.markClosed()
	s.unmonitor(c)
	c.endBackup(errBackupClosed)
	s.mu.Lock()
	delete(s.clients, c.id)
	s.mu.Unlock()
}

// clientByID returns the connected client id, or nil.
func (s *Server) clientByID(id int64) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[id]
}

// clientsSorted returns the connected clients by ID.
func (s *Server) clientsSorted() []*client {
	s.mu.Lock()
	out := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// serve runs a pipeline: the commands a client sent before waiting for a
// reply (runPipeline).
func (s *Server) serve(cn *conn, argvs [][][]byte) {
	c := cn.client
	s.drainMu.RLock()
	if s.draining {
		s.drainMu.RUnlock()
		cn.writeRaw(wire.AppendError(nil, "ERR server is shutting down"))
		cn.close()
		return
	}
	s.inflight.Add(1)
	s.drainMu.RUnlock()
	// The event loop answers the writes after its round: the batch is in
	// flight until then (answerDeferred), for Shutdown.
	c.holdsInflight = c.deferAnswer
	defer s.doneUnlessHeld(c)
	s.runPipeline(c, argvs)
}

// doneUnlessHeld ends serve's count of a batch, unless the event loop
// still has to answer it (answerDeferred ends it then).
func (s *Server) doneUnlessHeld(c *client) {
	if !c.holdsInflight {
		s.inflight.Done()
	}
}

// read runs a read command against the shard's engine (or answers where
// its keys are served: readAsk).
func (s *Server) read(c *client, shard, slot int, argv [][]byte) reply {
	return s.readAsk(c, shard, slot, argv, false)
}

// futureLike is what waitOne needs from a submitted unit (an *fsm.Future).
type futureLike interface {
	Done() <-chan struct{}
	Wait(ctx context.Context) ([]engine.Reply, error)
	Index() uint64 // the applying entry's log index, for WAIT
}

// argvSize is the bytes of argv's arguments.
func argvSize(argv [][]byte) int {
	n := 0
	for _, a := range argv {
		n += len(a)
	}
	return n
}

// waitReply waits for a unit of n commands and maps the outcome of its
// command idx to a reply.
func (s *Server) waitReply(f futureLike, slot, idx, n int) reply {
	rs, err := s.waitFuture(f)
	if err != nil {
		return s.mapError(err, slot)
	}
	if len(rs) != n {
		return errorf("ERR internal error: %d replies for %d commands", len(rs), n)
	}
	return s.redirect(rs[idx], slot)
}

// unitReply maps the outcome of a unit of n commands (waitFutureTimer's)
// to the reply of its command idx.
func (s *Server) unitReply(rs []engine.Reply, err error, slot, idx, n int) reply {
	if err != nil {
		return s.mapError(err, slot)
	}
	if len(rs) != n {
		return errorf("ERR internal error: %d replies for %d commands", len(rs), n)
	}
	return s.redirect(rs[idx], slot)
}

// waitFutureTimer waits for f, bounded by WriteTimeout, with the
// connection's reusable timer (its own goroutine only).
func (s *Server) waitFutureTimer(c *client, f futureLike) ([]engine.Reply, error) {
	select {
	case <-f.Done():
		return f.Wait(context.Background())
	default:
	}
	if c.waitTimer == nil {
		c.waitTimer = time.NewTimer(s.cfg.WriteTimeout)
	} else {
		c.waitTimer.Reset(s.cfg.WriteTimeout)
	}
	select {
	case <-f.Done():
		c.waitTimer.Stop()
		return f.Wait(context.Background())
	case <-c.waitTimer.C:
		return nil, fmt.Errorf("%w: %v", fsm.ErrUnknownOutcome, context.DeadlineExceeded)
	}
}

// waitFuture waits for f, bounded by WriteTimeout.
func (s *Server) waitFuture(f futureLike) ([]engine.Reply, error) {
	select {
	case <-f.Done():
		// Already answered, like most writes of a pipeline once the first
		// one's entry has applied: no deadline (and no timer) needed.
		return f.Wait(context.Background())
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	return f.Wait(ctx)
}

// waitOne waits for a one-command unit and maps its outcome to a reply.
func (s *Server) waitOne(f futureLike, slot int) reply {
	return s.waitReply(f, slot, 0, 1)
}

// route finds the shard and slot of argv's keys: shard -1 for a command
// without keys, crossSlot when the keys live in different slots of a
// cluster (more than one shard: Redis Cluster's rule, whichever shards own
// the slots, since slots move). A node of one shard behaves as a standalone
// Redis: any keys go together.
func (s *Server) route(cmd *command.Command, argv [][]byte) (shard, slot int, crossSlot bool) {
	shard, slot = -1, -1
	var buf [8]int // the usual command's key positions: no allocation
	keys := cmd.AppendKeys(buf[:0], argv)
	if len(keys) == 0 {
		return shard, slot, false
	}
	perSlot := len(keys) > 1 && s.be.NumShards() > 1
	for _, i := range keys {
		sl := slotOf(argv[i])
		if slot >= 0 && sl != slot && perSlot {
			return -1, -1, true
		}
		shard, slot = s.be.ShardOfSlot(sl), sl
	}
	return shard, slot, false
}
