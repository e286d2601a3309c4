package resp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
)

type (
	reply    = engine.Reply
	errReply = engine.Error
)

func errorf(format string, args ...any) *errReply { return engine.Errorf(format, args...) }

// Version is the Redis version raftstream reports (HELLO, INFO): the Redis
// release whose behaviour it follows.
const Version = "7.0.15"

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
	// Logger receives connection-level logs. Nil means discard.
	Logger *slog.Logger
	// Port is reported by INFO (tcp_port) and CONFIG GET port.
	Port int
	// Bind and Dir are reported by CONFIG GET.
	Bind, Dir string
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
	conf    map[string]string // local CONFIG SET values

	acl      *aclStore                // users and ACL LOG (acl.go)
	mem      atomic.Pointer[memWatch] // maxmemory verdict (limits.go); nil = no limit
	buf      bufLimits                // client query/output buffer limits (limits_buf.go)
	fwd      *forwarder               // nil unless Config.Forwarding
	sem      []chan struct{}          // per shard: pipelined writes in flight (MaxInFlight)
	waiters  *waiters
	nBlocked atomic.Int64 // connections currently waiting in a blocking read
	cmdm     *cmdMetrics  // per-command counts and latencies (metrics_cmds.go)

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
	s := &Server{cfg: cfg, be: be, log: log, started: time.Now(), clients: map[int64]*client{},
		conf: map[string]string{}, waiters: newWaiters(), drained: make(chan struct{})}
	s.acl = newACLStore(cfg.RequirePass)
	s.buf.init(log.Warn)
	if cfg.Forwarding {
		s.fwd = newForwarder(cfg.RequirePass)
	}
	s.sem = make([]chan struct{}, be.NumShards())
	for i := range s.sem {
		s.sem[i] = make(chan struct{}, cfg.MaxInFlight)
	}
	s.cmdm = newCmdMetrics()
	be.SetNotify(s.waiters.notify)
	return s
}

// Serve accepts connections on ln until Shutdown or Close. It returns nil
// after a shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.rs = newConnServer(s.serveRESP, s.accept, s.closed)
	rs := s.rs
	s.mu.Unlock()
	ln = guardListener{Listener: outListener{Listener: ln, lim: &s.buf}, maxBulk: s.cfg.ProtoMaxBulkLen, lim: &s.buf}
	return rs.Serve(&drainListener{Listener: ln, drained: s.drained})
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
	// reply; their connections are closed below).
	s.waiters.closeAll()
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

func (s *Server) accept(rc redcon.Conn) bool {
	s.drainMu.RLock()
	draining := s.draining
	s.drainMu.RUnlock()
	if draining {
		return false
	}
	c := newClient(s.nextID.Add(1), rc)
	c.out = outConnOf(rc.NetConn())
	c.user = s.acl.defaultAuto()
	c.authed = c.user != nil
	rc.SetContext(c)
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
	s.stats.connections.Add(1)
	return true
}

func (s *Server) closed(rc redcon.Conn, err error) {
	c, _ := rc.Context().(*client)
	if c == nil {
		return
	}
	c.markClosed()
	s.mu.Lock()
	delete(s.clients, c.id)
	s.mu.Unlock()
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

// serveRESP is redcon's handler. It takes the whole pipeline the client has
// sent so far and executes it, submitting consecutive writes together so
// that they share Raft entries, and writes replies in order.
func (s *Server) serveRESP(rc redcon.Conn, first redcon.Command) {
	c, _ := rc.Context().(*client)
	if c == nil {
		return
	}
	s.drainMu.RLock()
	if s.draining {
		s.drainMu.RUnlock()
		rc.WriteError("ERR server is shutting down")
		rc.Close()
		return
	}
	s.inflight.Add(1)
	s.drainMu.RUnlock()
	defer s.inflight.Done()

	cmds := rc.ReadPipeline()
	argvs := append(c.pipe.argvs[:0], first.Args)
	for _, cmd := range cmds {
		argvs = append(argvs, cmd.Args)
	}
	s.runPipeline(c, argvs)
	clear(argvs)
	c.pipe.argvs = keepSmall(argvs)
}

// pipeBufs are a connection's buffers for runPipeline, kept from one
// pipeline to the next (its own goroutine only). They are cleared after
// use, so that they hold no command or reply.
type pipeBufs struct {
	argvs      [][][]byte
	queue, run []pending
}

// maxKeptPipe is the longest pipeline buffer a connection keeps.
const maxKeptPipe = 1024

func keepSmall[T any](b []T) []T {
	if cap(b) > maxKeptPipe {
		return nil
	}
	return b[:0]
}

// maxArgs is Redis's limit on a multibulk count (INT_MAX).
const maxArgs = 1<<31 - 1

// pending is a reply not yet known: a submitted write.
type pending struct {
	fut   futureLike
	idx   int // this command's place in the unit fut answers
	n     int // the unit's length
	slot  int
	proto int
	argv  [][]byte
	sem   chan struct{} // the shard's in-flight permits; the unit's first command holds one
	name  string        // table name and start time, for command metrics
	start time.Time
}

// Bounds of a run of pipelined writes submitted as one unit (runPipeline):
// enough to carry a client's pipeline in one proposal, small enough that a
// bulk load still makes many entries of moderate size.
const (
	maxRunCommands = 256
	maxRunBytes    = 256 << 10
)

// runPipeline executes argvs in order. Writes are submitted without waiting;
// any other command first waits for the writes before it (so a read sees the
// connection's own writes), then runs synchronously. Consecutive writes to
// one shard are submitted as one unit: one proposal, one future and one
// in-flight permit instead of one per command. They apply in order within
// one log entry, and a failing command does not stop the others (as in
// EXEC), so each command's reply is what it would have been on its own.
func (s *Server) runPipeline(c *client, argvs [][][]byte) {
	// The clock is read once for the commands taken in without anything
	// waiting in between (fresh), and once per answered unit: a unit's
	// commands end together, and they are counted in the command metrics
	// together.
	var (
		start time.Time
		fresh bool
	)
	now := func() time.Time {
		if !fresh {
			start, fresh = time.Now(), true
		}
		return start
	}
	// The connection's last interaction (CLIENT LIST idle) is set when the
	// pipeline arrives and after it, instead of at each reply.
	c.batching = true
	c.lastAt.Store(now().UnixMilli())
	queue := c.pipe.queue[:0]
	waitAll := func() {
		if len(queue) == 0 {
			return
		}
		fresh = false
		var (
			lastFut futureLike
			rs      []engine.Reply // lastFut's outcome
			rerr    error
			end     time.Time
			obs     pending // the commands counted together: name, start
			obsN    int
		)
		observe := func() {
			if obsN > 0 {
				s.cmdm.observeN(obs.name, end.Sub(obs.start), obsN)
				obsN = 0
			}
		}
		for _, p := range queue {
			if p.fut != lastFut {
				// A unit's first command: wait for it once.
				observe()
				rs, rerr = s.waitFutureTimer(c, p.fut)
				lastFut, end = p.fut, time.Now()
			}
			r := s.unitReply(rs, rerr, p.slot, p.idx, p.n)
			if obsN > 0 && (p.name != obs.name || !p.start.Equal(obs.start)) {
				observe()
			}
			obs.name, obs.start = p.name, p.start
			obsN++
			if p.sem != nil {
				<-p.sem
			}
			if raw, ok := s.maybeForward(c, r, [][][]byte{p.argv}, false); ok {
				c.writeRaw(raw)
				continue
			}
			c.write(r, p.proto)
		}
		observe()
		clear(queue)
		queue = queue[:0]
	}
	// run holds the writes not submitted yet: consecutive, to one shard.
	var (
		run      = c.pipe.run[:0]
		runShard int
		runBytes int
	)
	submitRun := func() {
		if len(run) == 0 {
			return
		}
		fresh = false
		// Backpressure: at most MaxInFlight submissions per shard wait in
		// the shard's queue. Never block while holding permits (answer the
		// submitted writes first), so connections cannot deadlock on each
		// other.
		sem := s.sem[runShard]
		select {
		case sem <- struct{}{}:
		default:
			waitAll()
			sem <- struct{}{}
		}
		unit := make([][][]byte, len(run))
		for i := range run {
			unit[i] = run[i].argv
		}
		fut := s.be.Submit(runShard, unit)
		for i := range run {
			run[i].fut, run[i].idx, run[i].n = fut, i, len(run)
		}
		run[0].sem = sem
		queue = append(queue, run...)
		clear(run)
		run, runBytes = run[:0], 0
	}
	flush := func() {
		submitRun()
		waitAll()
	}
	// Consecutive plain reads are run together: one Read (one read fence)
	// per run of reads on the same shard.
	var reads []pendingRead
	flushReads := func() {
		if len(reads) > 0 {
			fresh = false
		}
		for i := 0; i < len(reads); {
			j := i + 1
			for j < len(reads) && reads[j].shard == reads[i].shard {
				j++
			}
			run := reads[i:j]
			unit := make([][][]byte, len(run))
			for k, r := range run {
				unit[k] = r.argv
			}
			out, ran, er := s.readRunBounded(c, run[0].shard, run[0].slot, unit)
			for k, r := range run {
				if er == nil && k >= ran {
					c.dropForOutput() // not run: past the output limit
					break
				}
				s.cmdm.observe(r.name, r.start)
				rep := er
				if er == nil {
					rep = out[k]
				}
				if raw, ok := s.maybeForward(c, rep, [][][]byte{r.argv}, false); ok {
					c.writeRaw(raw)
				} else {
					c.write(rep, c.proto)
				}
			}
			i = j
		}
		reads = reads[:0]
	}
	defer func() {
		flushReads()
		flush()
		c.pipe.queue, c.pipe.run = keepSmall(queue), keepSmall(run)
		c.batching = false
		c.lastAt.Store(time.Now().UnixMilli())
	}()
	for _, argv := range argvs {
		if c.isClosed() {
			return
		}
		s.stats.commands.Add(1)
		start := now()
		if len(argv) > maxArgs {
			flush()
			flushReads()
			c.write(errorf("ERR Protocol error: invalid multibulk length"), c.proto)
			c.close()
			return
		}
		for _, a := range argv {
			if int64(len(a)) > s.cfg.ProtoMaxBulkLen {
				flush()
				flushReads()
				c.write(errorf("ERR Protocol error: invalid bulk length"), c.proto)
				c.close()
				return
			}
		}
		cmd := s.plainCmd(c, argv)
		if shard, slot, name, ok := s.plainRead(cmd, argv); ok {
			c.lastCmdName = name
			flush() // a read sees the connection's earlier writes
			reads = append(reads, pendingRead{argv: argv, shard: shard, slot: slot, name: name, start: start})
			continue
		}
		flushReads() // and a write never overtakes an earlier read
		if shard, slot, name, ok := s.plainWrite(cmd, argv); ok {
			c.lastCmdName = name
			size := argvSize(argv)
			if len(run) > 0 && (shard != runShard || len(run) >= maxRunCommands || runBytes+size > maxRunBytes) {
				submitRun()
			}
			runShard, runBytes = shard, runBytes+size
			run = append(run, pending{slot: slot, proto: c.proto, argv: argv, name: name, start: start})
			continue
		}
		flush()
		flushReads()
		fresh = false
		r := s.exec(c, argv)
		c.publish()
		if !isBlocking(argv) {
			s.cmdm.observeArgv(argv, start)
		}
		if r != nil {
			if raw, ok := s.maybeForward(c, r, s.forwardUnit(c, argv), isBlocking(argv)); ok {
				c.writeRaw(raw)
			} else {
				c.write(r, c.proto)
			}
		}
		if c.quitting {
			c.close()
			return
		}
	}
}

// plainWrite reports whether argv, looked up by plainCmd as cmd, is a plain
// write (outside MULTI, not blocking, keys in one shard) that can be
// submitted without waiting, and where it goes.
func (s *Server) plainWrite(cmd *Command, argv [][]byte) (shard, slot int, name string, ok bool) {
	if cmd == nil || cmd.Kind != KindWrite || s.overMaxMemory() {
		return 0, 0, "", false
	}
	if cmd.Flags&FlagBlocking != 0 {
		if _, blocks := blockTimeout(argv); blocks {
			return 0, 0, "", false
		}
	}
	shard, slot, er := s.route(cmd, argv)
	if er != nil || shard < 0 || shard >= len(s.sem) {
		return 0, 0, "", false
	}
	return shard, slot, cmd.Name, true
}

// pendingRead is a plain read waiting to run with the reads next to it.
type pendingRead struct {
	argv        [][]byte
	shard, slot int
	name        string // table name and start time, for command metrics
	start       time.Time
}

// plainRead reports whether argv, looked up by plainCmd as cmd, is a plain
// read (outside MULTI, not blocking, keys in one shard) that can be batched
// with its neighbours.
func (s *Server) plainRead(cmd *Command, argv [][]byte) (shard, slot int, name string, ok bool) {
	if cmd == nil || cmd.Kind != KindRead {
		return 0, 0, "", false
	}
	if cmd.Flags&FlagBlocking != 0 {
		if _, blocks := blockTimeout(argv); blocks {
			return 0, 0, "", false
		}
	}
	shard, slot, er := s.route(cmd, argv)
	if er != nil || shard < 0 {
		return 0, 0, "", false
	}
	return shard, slot, cmd.Name, true
}

// plainCmd looks argv up once for plainRead and plainWrite. It returns nil
// when the command cannot take either path: inside MULTI, before AUTH, for a
// connection whose ACL user is restricted, or for an unknown command or
// wrong arity (exec then answers the error).
func (s *Server) plainCmd(c *client, argv [][]byte) *Command {
	if c.multi != nil || !c.authed || c.restricted(s) {
		return nil
	}
	cmd, er := lookup(argv)
	if er != nil {
		return nil
	}
	return cmd
}

// exec runs one command through the general path and returns its reply
// (nil when the reply was already written or the connection is closing).
func (s *Server) exec(c *client, argv [][]byte) reply {
	c.lastCmd = argv[0]
	if c.multi != nil {
		if r, handled := s.multiQueue(c, argv); handled {
			return r
		}
	}
	cmd, er := lookup(argv)
	if er != nil {
		return er
	}
	if !c.authed && cmd.Flags&FlagNoAuth == 0 {
		if cmd.Name == "exec" {
			// Redis rejects EXEC as a whole (execCommandAbort).
			c.multi = nil
			return errorf("EXECABORT Transaction discarded because of: %s", errNoAuth.Msg)
		}
		return errNoAuth
	}
	c.lastCmdName = cmd.Name
	c.publish()
	if er := s.checkPerm(c, cmd, argv); er != nil {
		return er
	}
	if er := s.checkOOM(cmd); er != nil {
		return er
	}
	switch cmd.Name {
	case "multi":
		return s.cmdMulti(c)
	case "exec":
		return s.cmdExec(c)
	case "discard":
		return s.cmdDiscard(c)
	}
	if cmd.Kind == KindLocal {
		return cmd.local(s, c, argv)
	}
	shard, slot, er := s.route(cmd, argv)
	if er != nil {
		return er
	}
	if shard < 0 {
		// No keys (XGROUP HELP, XINFO HELP): the answer does not depend on
		// any state, so an empty engine gives it on any node.
		return engine.New(engine.DefaultConfig()).Exec(nowMs(), argv)
	}
	if cmd.Flags&FlagBlocking != 0 {
		if ms, ok := blockTimeout(argv); ok {
			return s.blockingRead(c, cmd, shard, slot, argv, ms)
		}
	}
	if cmd.Kind == KindWrite {
		// The shard validates the command before proposing it (fsm.Submit),
		// so garbage never enters the log.
		return s.waitOne(s.be.Submit(shard, [][][]byte{argv}), slot)
	}
	return s.read(c, shard, slot, argv)
}

// read runs a read command against the shard's engine.
func (s *Server) read(c *client, shard, slot int, argv [][]byte) reply {
	var r reply
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	now := time.Now().UnixMilli()
	err := s.be.Read(ctx, shard, c.readonly, func(e *engine.Engine) { r = e.Exec(now, argv) })
	if err != nil {
		return s.mapReadError(err, slot)
	}
	return r
}

// futureLike is what waitOne needs from a submitted unit (an *fsm.Future).
type futureLike interface {
	Done() <-chan struct{}
	Wait(ctx context.Context) ([]engine.Reply, error)
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
	return rs[idx]
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
	return rs[idx]
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

// route finds the shard of argv's keys. It returns shard -1 for commands
// without keys, and CROSSSLOT when keys live in different shards.
func (s *Server) route(cmd *Command, argv [][]byte) (shard, slot int, er *errReply) {
	shard, slot = -1, -1
	var buf [8]int // the usual command's key positions: no allocation
	var keys []int
	if cmd.StreamsKeyword {
		keys = cmd.Keys(argv)
	} else {
		keys = cmd.appendKeys(buf[:0], argv)
	}
	for _, i := range keys {
		sl := slotOf(argv[i])
		sh := s.be.ShardOfSlot(sl)
		if shard >= 0 && sh != shard {
			return -1, -1, errCrossSlot
		}
		shard, slot = sh, sl
	}
	return shard, slot, nil
}

// intArg parses a decimal integer argument.
func intArg(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}
