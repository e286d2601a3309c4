package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The raft bus: every shard group's AppendEntries RPCs (heartbeats
// included) between two nodes share one connection per direction, in the
// compact binary frames of raftwire.go. Each group's other RPCs (votes,
// pre-votes, TimeoutNow, InstallSnapshot) stay on its own NetworkTransport
// (groupTransport), as does AppendEntries to a peer that does not accept
// the bus (an older version).
//
// Why: with a NetworkTransport per group, every group's every RPC is its
// own msgpack encoding, its own socket write and read on both sides and its
// own connection; 16 groups cost a node 16 times the RPC overhead for the
// same commands. Here a node sends whatever all its groups queued for a
// peer in one write (busWriter), and the peer answers all of them in as few
// writes.
//
// Safety is raft's: requests and responses carry every field raft sends,
// a group's requests are handed to its raft goroutine in the order they
// arrived (one reader per connection), no RPC takes the heartbeat fast path
// (hashicorp/raft#695), and pipelining stays off (hashicorp/raft#612): each
// replication goroutine has one call in flight, as before. Nothing waits
// without a bound: a call ends with its response, the connection's failure,
// the transport's Close or after Timeout; a write has the same deadline; a
// group whose raft goroutine falls more than busGroupQueue RPCs behind is
// answered "busy" (raft retries after a backoff) instead of blocking the
// connection's other groups.

// RaftBusGroup is the mux group of the raft bus's connections.
const RaftBusGroup = "raftbus/1"

// busHello is the accepting side's first bytes: the dialer then knows the
// peer speaks the bus (a node without it closes the connection instead).
const busHello = "RBUS"

// busGroupQueue bounds the RPCs of one group that its raft goroutine has
// not answered yet; per leader there are at most two (an append and a
// heartbeat), pipelining being off.
const busGroupQueue = 64

// busFallbackFor is how long AppendEntries to a peer that refused the bus
// goes over the group's NetworkTransport before the bus is tried again.
const busFallbackFor = 10 * time.Second

var (
	errNoRaftBus   = errors.New("cluster: peer does not accept the raft bus")
	errBusClosed   = errors.New("cluster: raft bus closed")
	errBusGroupBsy = "raft bus: group busy"
)

// RaftBusStats are the raft bus's counters since the node opened.
type RaftBusStats struct {
	// AppendRPCs counts the AppendEntries requests the node's shard
	// groups sent as leaders, heartbeats included, over the bus or not
	// (EarlyAnswered of them were answered without being sent);
	// Heartbeats those without entries, previous entry or commit index
	// (raft's heartbeat loop).
	AppendRPCs uint64
	Heartbeats uint64
	// Entries counts the log entries those requests carried.
	Entries uint64
	// BytesSent counts the bytes of every frame sent on the bus, requests
	// and responses; Writes the socket writes that carried them.
	BytesSent uint64
	Writes    uint64
	// Fallbacks counts AppendEntries sent over a group's NetworkTransport
	// because the peer does not accept the bus.
	Fallbacks uint64
	// Received counts the requests received for local groups; Busy those
	// refused because the group's raft goroutine was busyGroupQueue behind.
	Received uint64
	Busy     uint64
	// Early counts the AppendEntries a leader sent early (its new
	// entries while it writes them itself, early.go); EarlyFailed those
	// not answered with success.
	Early       uint64
	EarlyFailed uint64
	// EarlyAnswered counts raft's AppendEntries that were not sent because
	// an early request had carried the same and been answered with success
	// (its answer is theirs).
	EarlyAnswered uint64
}

// raftBusCounters are RaftBusStats' live counters.
type raftBusCounters struct {
	appends, heartbeats, entries, bytes, writes, fallbacks, received, busy, early, earlyFailed, earlyAnswered atomic.Uint64
}

// raftBus is a node's end of the raft bus: the connections it dialed (one
// per peer), those it accepted, and its groups' receiving ends.
type raftBus struct {
	layer   *StreamLayer
	book    *addrBook
	log     *slog.Logger
	timeout time.Duration // bounds calls and writes
	dial    time.Duration // bounds dials and the hello

	mu      sync.Mutex
	groups  map[uint32]*busGroup
	peers   map[string]*busPeer
	inbound map[*busConn]struct{}
	closed  bool

	stats      raftBusCounters
	shutdownCh chan struct{}
	wg         sync.WaitGroup
}

func newRaftBus(mux *Mux, book *addrBook, log *slog.Logger, timeout time.Duration) *raftBus {
	b := &raftBus{
		layer: mux.Layer(RaftBusGroup), book: book, log: log, timeout: timeout, dial: mux.timeout,
		groups: map[uint32]*busGroup{}, peers: map[string]*busPeer{}, inbound: map[*busConn]struct{}{},
		shutdownCh: make(chan struct{}),
	}
	b.goFunc(b.acceptLoop)
	return b
}

func (b *raftBus) goFunc(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// Stats returns the bus's counters.
func (b *raftBus) Stats() RaftBusStats {
	s := &b.stats
	return RaftBusStats{
		AppendRPCs: s.appends.Load(), Heartbeats: s.heartbeats.Load(), Entries: s.entries.Load(),
		BytesSent: s.bytes.Load(), Writes: s.writes.Load(), Fallbacks: s.fallbacks.Load(),
		Received: s.received.Load(), Busy: s.busy.Load(),
		Early: s.early.Load(), EarlyFailed: s.earlyFailed.Load(), EarlyAnswered: s.earlyAnswered.Load(),
	}
}

// Close closes every connection and waits for the bus's goroutines. The
// groups' transports fail their calls from then on.
func (b *raftBus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.shutdownCh)
	peers, inbound := b.peers, b.inbound
	b.peers, b.inbound = map[string]*busPeer{}, map[*busConn]struct{}{}
	b.mu.Unlock()
	b.layer.Close()
	for _, p := range peers {
		p.close()
	}
	for c := range inbound {
		c.w.close(errBusClosed)
	}
	b.wg.Wait()
}

// busWriter queues frames for one connection and writes them with no
// goroutine of its own: whoever queues a frame while no write is under way
// writes everything queued, including what others queue during its write,
// so a frame costs no hand-off when the connection is quiet and frames
// share writes when it is busy. Frames marked lazy (heartbeats and their
// answers, which nobody waits on in a hurry) wait up to busLazyDelay for
// company rather than being written alone, so an idle node's heartbeats to
// a peer share writes too. Each write is bounded by the bus timeout; the
// first failure closes the connection.
type busWriter struct {
	c       net.Conn
	timeout time.Duration
	stats   *raftBusCounters

	mu        sync.Mutex
	buf       []byte // frames queued
	spare     []byte
	writing   bool
	lazyTimer *time.Timer
	err       error // the failure that ended the connection
}

// busLazyDelay bounds how long a lazy frame waits for others.
const busLazyDelay = 5 * time.Millisecond

func newBusWriter(c net.Conn, timeout time.Duration, stats *raftBusCounters) *busWriter {
	return &busWriter{c: c, timeout: timeout, stats: stats}
}

// send queues a frame, built by frame, and writes it unless a write is
// under way (which takes it) or it is lazy. An error means the connection
// failed; frames queued earlier may have been lost with it.
func (w *busWriter) send(lazy bool, frame func(b []byte) []byte) error {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.buf = frame(w.buf)
	if w.writing {
		w.mu.Unlock()
		return nil
	}
	if lazy {
		if w.lazyTimer == nil {
			w.lazyTimer = time.AfterFunc(busLazyDelay, w.flushLazy)
		}
		w.mu.Unlock()
		return nil
	}
	return w.writeLocked()
}

// flushLazy writes lazy frames nobody took along.
func (w *busWriter) flushLazy() {
	w.mu.Lock()
	w.lazyTimer = nil
	if w.writing || w.err != nil || len(w.buf) == 0 {
		w.mu.Unlock()
		return
	}
	_ = w.writeLocked()
}

// writeLocked writes what is queued until nothing is; w.mu is held on
// entry and released on return.
func (w *busWriter) writeLocked() error {
	w.writing = true
	if w.lazyTimer != nil {
		w.lazyTimer.Stop()
		w.lazyTimer = nil
	}
	for {
		out := w.buf
		w.buf = w.spare[:0]
		w.mu.Unlock()
		_ = w.c.SetWriteDeadline(time.Now().Add(w.timeout))
		_, err := w.c.Write(out)
		w.stats.writes.Add(1)
		w.stats.bytes.Add(uint64(len(out)))
		w.mu.Lock()
		if cap(out) <= 1<<20 {
			w.spare = out[:0]
		} else {
			w.spare = nil
		}
		if err != nil {
			w.writing = false
			w.mu.Unlock()
			w.close(err)
			return err
		}
		if len(w.buf) == 0 {
			w.writing = false
			w.mu.Unlock()
			return nil
		}
	}
}

// close ends the connection with err (the first one counts); later sends
// fail with it.
func (w *busWriter) close(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
		w.buf = nil
		if w.lazyTimer != nil {
			w.lazyTimer.Stop()
			w.lazyTimer = nil
		}
	}
	w.mu.Unlock()
	w.c.Close()
}

// readFrame reads one frame. Bodies up to len(small) go into small (the
// caller's reusable buffer), larger ones into a fresh slice.
func readFrame(r *bufio.Reader, small []byte) (kind byte, group uint32, call uint64, body []byte, err error) {
	var hdr [frameHeaderLen]byte
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return
	}
	n := binary.LittleEndian.Uint32(hdr[0:4])
	if n < frameHeaderLen-4 || n > maxFrame {
		err = fmt.Errorf("%w: length %d", errBadFrame, n)
		return
	}
	kind, group, call = hdr[4], binary.LittleEndian.Uint32(hdr[5:9]), binary.LittleEndian.Uint64(hdr[9:17])
	size := int(n) - (frameHeaderLen - 4)
	if size <= len(small) {
		body = small[:size]
	} else {
		body = make([]byte, size)
	}
	_, err = io.ReadFull(r, body)
	return
}

// --- the dialing side: calls -------------------------------------------

// busCall is one AppendEntries waiting for its response.
type busCall struct {
	resp *raft.AppendEntriesResponse
	err  error
	done chan struct{} // receives once the reader filled resp or err
}

var callPool = sync.Pool{New: func() any { return &busCall{done: make(chan struct{}, 1)} }}

// busPeer is the connection this node dialed to one peer, shared by all of
// its groups' calls; redialed on the next call after it fails.
type busPeer struct {
	bus  *raftBus
	addr string

	mu         sync.Mutex
	cur        *peerConn
	dialing    chan struct{} // closed when the dial under way ends
	dialErr    error
	noBusUntil time.Time
	closed     bool
}

// peerConn is one dialed connection and the calls waiting on it.
type peerConn struct {
	peer *busPeer
	w    *busWriter

	mu    sync.Mutex
	calls map[uint64]*busCall
	next  uint64
	dead  error
}

// peer returns the outbound end for the bus address addr.
func (b *raftBus) peer(addr string) (*busPeer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errBusClosed
	}
	p := b.peers[addr]
	if p == nil {
		p = &busPeer{bus: b, addr: addr}
		b.peers[addr] = p
	}
	return p, nil
}

// live returns the live connection, nil if there is none (it never dials).
func (p *busPeer) live() *peerConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// conn returns the live connection, dialing one if there is none. Callers
// arriving during a dial wait for it (bounded by the dial timeout) and share
// its outcome. errNoRaftBus: the peer refused the bus lately.
func (p *busPeer) conn() (*peerConn, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, errBusClosed
		}
		if p.cur != nil {
			pc := p.cur
			p.mu.Unlock()
			return pc, nil
		}
		if time.Now().Before(p.noBusUntil) {
			p.mu.Unlock()
			return nil, errNoRaftBus
		}
		if p.dialing == nil {
			break
		}
		ch := p.dialing
		p.mu.Unlock()
		<-ch
		p.mu.Lock()
		if p.cur == nil && p.dialErr != nil && !errors.Is(p.dialErr, errNoRaftBus) {
			err := p.dialErr
			p.mu.Unlock()
			return nil, err
		}
	}
	ch := make(chan struct{})
	p.dialing = ch
	p.mu.Unlock()

	pc, err := p.dial()

	p.mu.Lock()
	p.dialing, p.dialErr = nil, err
	if errors.Is(err, errNoRaftBus) {
		p.noBusUntil = time.Now().Add(busFallbackFor)
		p.bus.log.Info("peer does not accept the raft bus; its AppendEntries go over each group's transport", "peer", p.addr, "for", busFallbackFor)
	}
	if err == nil {
		if p.closed {
			err = errBusClosed
			pc.w.close(errBusClosed)
		} else {
			p.cur = pc
		}
	}
	p.mu.Unlock()
	close(ch)
	if err != nil {
		return nil, err
	}
	p.bus.goFunc(pc.readLoop)
	return pc, nil
}

// dial connects to the peer's bus and reads its hello.
func (p *busPeer) dial() (*peerConn, error) {
	b := p.bus
	c, err := b.layer.Dial(raft.ServerAddress(p.addr), b.dial)
	if err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(b.dial))
	var hello [len(busHello)]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil || string(hello[:]) != busHello {
		c.Close()
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errNoRaftBus
		}
		return nil, err
	}
	_ = c.SetReadDeadline(time.Time{})
	return &peerConn{peer: p, w: newBusWriter(c, b.timeout, &b.stats), calls: map[uint64]*busCall{}}, nil
}

// close closes the current connection; later calls fail.
func (p *busPeer) close() {
	p.mu.Lock()
	p.closed = true
	pc := p.cur
	p.cur = nil
	p.mu.Unlock()
	if pc != nil {
		pc.fail(errBusClosed)
	}
}

// call sends req for group and waits for its response in resp: at most
// timeout, and no longer than stop stays open.
func (pc *peerConn) call(group uint32, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, timeout time.Duration, stop <-chan struct{}) error {
	id, c, err := pc.start(group, req, resp)
	if err != nil {
		return err
	}
	return pc.wait(id, c, timeout, stop)
}

// start sends req for group; its response goes to resp once the reader
// has it, and wait must follow with the returned id and call.
func (pc *peerConn) start(group uint32, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (uint64, *busCall, error) {
	c := callPool.Get().(*busCall)
	c.resp, c.err = resp, nil
	pc.mu.Lock()
	if pc.dead != nil {
		err := pc.dead
		pc.mu.Unlock()
		callPool.Put(c)
		return 0, nil, err
	}
	pc.next++
	id := pc.next
	pc.calls[id] = c
	pc.mu.Unlock()

	if err := pc.w.send(isHeartbeat(req), func(b []byte) []byte { return appendAppendRequest(b, group, id, req) }); err != nil {
		pc.fail(err) // fails c too
	}
	return id, c, nil
}

// wait waits for the response to call id, as call does.
func (pc *peerConn) wait(id uint64, c *busCall, timeout time.Duration, stop <-chan struct{}) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case <-c.done:
		err = c.err
	case <-timer.C:
		err = fmt.Errorf("cluster: raft bus: no response from %s within %v", pc.peer.addr, timeout)
		pc.abandon(id, c)
	case <-stop:
		err = raft.ErrTransportShutdown
		pc.abandon(id, c)
	}
	c.resp = nil
	callPool.Put(c)
	return err
}

// abandon forgets call id; if the reader took it already, waits for it to
// be done with it (it fills it at once) so c can be reused.
func (pc *peerConn) abandon(id uint64, c *busCall) {
	pc.mu.Lock()
	_, waiting := pc.calls[id]
	delete(pc.calls, id)
	pc.mu.Unlock()
	if !waiting {
		<-c.done
	}
}

// take removes and returns call id, nil if it was abandoned.
func (pc *peerConn) take(id uint64) *busCall {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	c := pc.calls[id]
	delete(pc.calls, id)
	return c
}

// fail ends the connection: every waiting call fails with err, and the
// peer dials again on its next call.
func (pc *peerConn) fail(err error) {
	pc.mu.Lock()
	if pc.dead != nil {
		pc.mu.Unlock()
		return
	}
	pc.dead = err
	calls := pc.calls
	pc.calls = nil
	pc.mu.Unlock()
	pc.w.close(err)
	p := pc.peer
	p.mu.Lock()
	if p.cur == pc {
		p.cur = nil
	}
	p.mu.Unlock()
	for _, c := range calls {
		c.err = fmt.Errorf("cluster: raft bus connection to %s: %w", p.addr, err)
		c.done <- struct{}{}
	}
}

// readLoop reads responses until the connection fails.
func (pc *peerConn) readLoop() {
	r := bufio.NewReaderSize(pc.w.c, 32<<10)
	small := make([]byte, 4<<10)
	var in interned
	for {
		kind, _, id, body, err := readFrame(r, small)
		if err != nil {
			pc.fail(err)
			return
		}
		c := pc.take(id)
		if c == nil {
			continue // abandoned: timed out or its transport closed
		}
		var broken error // the stream itself is bad
		switch kind {
		case frameAppendOK:
			broken = decodeAppendResponse(body, c.resp, &in)
			c.err = broken
		case frameError:
			c.err = errors.New(string(body))
		default:
			broken = fmt.Errorf("%w: kind %d", errBadFrame, kind)
			c.err = broken
		}
		c.done <- struct{}{} // c belongs to its caller again
		if broken != nil {
			pc.fail(broken)
			return
		}
	}
}

// --- the accepting side --------------------------------------------------

// busConn is a connection a peer dialed: requests in, responses out.
type busConn struct {
	bus *raftBus
	c   net.Conn
	w   *busWriter
}

func (b *raftBus) acceptLoop() {
	for {
		c, err := b.layer.Accept()
		if err != nil {
			return
		}
		bc := &busConn{bus: b, c: c, w: newBusWriter(c, b.timeout, &b.stats)}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.inbound[bc] = struct{}{}
		b.mu.Unlock()
		b.goFunc(bc.readLoop)
	}
}

// readLoop says hello, then hands every request to its group until the
// connection fails.
func (bc *busConn) readLoop() {
	b := bc.bus
	defer func() {
		bc.w.close(net.ErrClosed)
		b.mu.Lock()
		delete(b.inbound, bc)
		b.mu.Unlock()
	}()
	if err := bc.w.send(false, func(p []byte) []byte { return append(p, busHello...) }); err != nil {
		return
	}
	r := bufio.NewReaderSize(bc.c, 64<<10)
	for {
		kind, group, id, body, err := readFrame(r, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.log.Debug("raft bus connection ended", "remote", bc.c.RemoteAddr(), "err", err)
			}
			return
		}
		if kind != frameAppend {
			b.log.Warn("raft bus: unexpected frame; closing the connection", "kind", kind, "remote", bc.c.RemoteAddr())
			return
		}
		req, err := decodeAppendRequest(body)
		if err != nil {
			b.log.Warn("raft bus: undecodable request; closing the connection", "err", err, "remote", bc.c.RemoteAddr())
			return
		}
		b.stats.received.Add(1)
		b.mu.Lock()
		g := b.groups[group]
		b.mu.Unlock()
		if g == nil {
			bc.sendError(group, id, fmt.Sprintf("raft bus: no group %d here", group))
			continue
		}
		if !g.deliver(bc, id, req, isHeartbeat(req)) {
			b.stats.busy.Add(1)
			bc.sendError(group, id, errBusGroupBsy)
		}
	}
}

func (bc *busConn) sendError(group uint32, id uint64, msg string) {
	_ = bc.w.send(false, func(b []byte) []byte { return appendError(b, group, id, msg) })
}

// respond sends raft's answer to request id of group (lazily for a
// heartbeat).
func (bc *busConn) respond(group uint32, id uint64, r raft.RPCResponse, lazy bool) {
	resp, ok := r.Response.(*raft.AppendEntriesResponse)
	switch {
	case r.Error != nil:
		bc.sendError(group, id, r.Error.Error())
	case !ok:
		bc.sendError(group, id, fmt.Sprintf("raft bus: unexpected response %T", r.Response))
	default:
		_ = bc.w.send(lazy, func(b []byte) []byte { return appendAppendResponse(b, group, id, resp) })
	}
}

// inboundRPC is a request handed to a group's raft goroutine, waiting for
// its answer.
type inboundRPC struct {
	conn      *busConn
	call      uint64
	heartbeat bool
	respCh    chan raft.RPCResponse
}

var inboundPool = sync.Pool{New: func() any { return &inboundRPC{respCh: make(chan raft.RPCResponse, 1)} }}

// busGroup is the receiving end of one local group: the channel its raft
// goroutine consumes, and the requests it has yet to answer, in order.
type busGroup struct {
	id    uint32
	rpcCh chan raft.RPC
	// mu makes a request's place in rpcCh and in pending the same.
	mu      sync.Mutex
	pending chan *inboundRPC
	closeCh chan struct{}
}

// deliver hands req to the group's raft goroutine without blocking; false
// when busGroupQueue requests are still unanswered.
func (g *busGroup) deliver(bc *busConn, id uint64, req *raft.AppendEntriesRequest, heartbeat bool) bool {
	in := inboundPool.Get().(*inboundRPC)
	in.conn, in.call, in.heartbeat = bc, id, heartbeat
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == cap(g.pending) {
		inboundPool.Put(in)
		return false
	}
	select {
	case g.rpcCh <- raft.RPC{Command: req, RespChan: in.respCh}:
		g.pending <- in
		return true
	default:
		inboundPool.Put(in)
		return false
	}
}

// respondLoop sends raft's answers, in the order the requests arrived
// (raft answers an RPC before it takes the next one). When the group
// closes, what is left is answered with an error.
func (g *busGroup) respondLoop() {
	for {
		select {
		case in := <-g.pending:
			select {
			case r := <-in.respCh:
				in.conn.respond(g.id, in.call, r, in.heartbeat)
				in.conn = nil
				inboundPool.Put(in)
			case <-g.closeCh:
				in.conn.sendError(g.id, in.call, raft.ErrTransportShutdown.Error())
				g.failPending()
				return
			}
		case <-g.closeCh:
			g.failPending()
			return
		}
	}
}

func (g *busGroup) failPending() {
	for {
		select {
		case in := <-g.pending:
			in.conn.sendError(g.id, in.call, raft.ErrTransportShutdown.Error())
		default:
			return
		}
	}
}

// isHeartbeat reports whether req is what raft's heartbeat loop sends: no
// entries, previous entry or commit index.
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	return len(req.Entries) == 0 && req.PrevLogEntry == 0 && req.LeaderCommitIndex == 0
}

// --- one group's transport -----------------------------------------------

// busTransport is a shard group's raft.Transport: AppendEntries over the
// raft bus, everything else over the group's own NetworkTransport
// (fallback, which it owns and closes). Its Consumer carries both.
type busTransport struct {
	announcingTransport // votes, snapshots, TimeoutNow; its Consumer is forwarded
	rb                  *raftBus
	group               *busGroup
	closeCh             chan struct{}
	closeOnce           sync.Once
	fwdDone             chan struct{}
	early               earlyPeers // early.go
}

var (
	_ raft.Transport   = (*busTransport)(nil)
	_ raft.WithClose   = (*busTransport)(nil)
	_ raft.WithPreVote = (*busTransport)(nil)
)

// transport registers shard's group on the bus and returns its transport,
// with tr for the RPCs the bus does not carry; stats counts the requests it
// sends (busstats.go).
func (b *raftBus) transport(shard int, tr *raft.NetworkTransport, stats *busStats) *busTransport {
	g := &busGroup{
		id: uint32(shard), rpcCh: make(chan raft.RPC, busGroupQueue),
		pending: make(chan *inboundRPC, busGroupQueue), closeCh: make(chan struct{}),
	}
	t := &busTransport{announcingTransport: announcingTransport{tr, stats}, rb: b, group: g, closeCh: g.closeCh, fwdDone: make(chan struct{})}
	b.mu.Lock()
	b.groups[g.id] = g
	b.mu.Unlock()
	go g.respondLoop()
	go t.forward()
	return t
}

// forward passes the NetworkTransport's RPCs to the group's consumer.
func (t *busTransport) forward() {
	defer close(t.fwdDone)
	for {
		select {
		case rpc := <-t.NetworkTransport.Consumer():
			select {
			case t.group.rpcCh <- rpc:
			case <-t.closeCh:
				return
			}
		case <-t.closeCh:
			return
		}
	}
}

// Consumer implements raft.Transport.
func (t *busTransport) Consumer() <-chan raft.RPC { return t.group.rpcCh }

// AppendEntries implements raft.Transport.
func (t *busTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	select {
	case <-t.closeCh:
		return raft.ErrTransportShutdown
	default:
	}
	b := t.rb
	p, err := t.peer(id, target)
	if err != nil {
		return err
	}
	pc, err := p.conn()
	if errors.Is(err, errNoRaftBus) {
		b.stats.fallbacks.Add(1)
		return t.announcingTransport.AppendEntries(id, target, args, resp)
	}
	if err != nil {
		return err
	}
	if t.early.answered(id, args, resp, b.timeout, t.closeCh) {
		b.stats.earlyAnswered.Add(1)
		t.early.observe(id, target, args, resp, nil)
		return nil
	}
	t.bus.raftReqs.Add(1)
	err = pc.call(t.group.id, args, resp, b.timeout, t.closeCh)
	t.early.observe(id, target, args, resp, err)
	return err
}

// peer returns the bus's outbound end for server id (target as raft
// names it).
func (t *busTransport) peer(id raft.ServerID, target raft.ServerAddress) (*busPeer, error) {
	b := t.rb
	addr, err := b.book.ServerAddr(id)
	if err != nil {
		addr = raft.ServerAddress(b.book.dialAddr(string(target)))
	}
	return b.peer(string(addr))
}

// Close unregisters the group (its peers' requests are refused from then
// on), fails its waiting calls and answers, closes its NetworkTransport.
// Idempotent.
func (t *busTransport) Close() error {
	var err error
	t.closeOnce.Do(func() {
		b := t.rb
		b.mu.Lock()
		if b.groups[t.group.id] == t.group {
			delete(b.groups, t.group.id)
		}
		b.mu.Unlock()
		close(t.closeCh)
		err = t.NetworkTransport.Close()
		<-t.fwdDone
	})
	return err
}
