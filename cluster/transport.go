package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Connection preamble on the cluster bus. Every connection starts with
//
//	"RSB1" | len(group) (1 byte, 1..255) | group name
//
// and then carries the named group's protocol (raft's NetworkTransport
// framing for shard and controller groups, JSON lines for the rpc group).
// The mux reads the preamble in a per-connection goroutine under a read
// deadline, never in the accept loop, so a slow or silent peer cannot stall
// other connections.
const preambleMagic = "RSB1"

// Reserved group names. Shard groups are named "shard/<n>".
const (
	// ControllerGroup is the Raft group holding the cluster topology.
	ControllerGroup = "controller"
	// RPCGroup carries the join/formation RPC (see rpc.go).
	RPCGroup = "rpc"
)

// ShardGroup is the group name of shard n.
func ShardGroup(n int) string { return fmt.Sprintf("shard/%d", n) }

// ErrLayerClosed is returned by StreamLayer.Accept once the layer or its mux
// is closed.
var ErrLayerClosed = errors.New("cluster: stream layer closed")

// Mux is one TCP listener shared by many groups. Invariant: a connection is
// handed to at most one group's layer; connections naming an unknown group
// are closed.
type Mux struct {
	ln        net.Listener
	advertise net.Addr
	timeout   time.Duration
	log       *slog.Logger
	// dialMap rewrites dial addresses (Config.DebugDialMap); read-only
	// after Listen's caller sets it, before any dial.
	dialMap map[string]string
	// tls, when set (SetTLS, cluster/tls.go), makes every bus connection
	// mutually authenticated TLS.
	tls atomic.Pointer[BusTLS]
	// stats, when set, counts the bytes of every later bus connection
	// (busstats.go).
	stats atomic.Pointer[busStats]

	mu     sync.Mutex
	groups map[string]*StreamLayer
	conns  map[net.Conn]struct{} // accepted, preamble not yet routed

	shutdownCh chan struct{}
	closeOnce  sync.Once
	wg         sync.WaitGroup
}

// Listen opens the cluster bus on bindAddr. advertise is the address peers
// dial (returned by every layer's Addr); timeout bounds dials and preamble
// reads.
func Listen(bindAddr, advertise string, timeout time.Duration, log *slog.Logger) (*Mux, error) {
	// The advertised address is kept as written, host name included, and
	// resolved by each dial: a peer whose name now maps to a new IP (a
	// rescheduled pod, a recreated container network) stays reachable.
	host, port, err := net.SplitHostPort(advertise)
	if err != nil {
		return nil, fmt.Errorf("cluster: advertise address %q: %w", advertise, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("cluster: advertise address %q: bad port", advertise)
	}
	ln, err := net.Listen("tcp", bindAddr)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen on %s: %w", bindAddr, err)
	}
	if port == "0" { // bound to :0 (tests): advertise the real port
		port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	adv := busAddr(net.JoinHostPort(host, port))
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mux{
		ln: ln, advertise: adv, timeout: timeout, log: log,
		groups:     make(map[string]*StreamLayer),
		conns:      make(map[net.Conn]struct{}),
		shutdownCh: make(chan struct{}),
	}
	m.goFunc(m.acceptLoop)
	return m, nil
}

// Addr is the advertised bus address.
func (m *Mux) Addr() net.Addr { return m.advertise }

// busAddr is an advertised "host:port" that is resolved when dialed, not
// when the node starts.
type busAddr string

func (a busAddr) Network() string { return "tcp" }
func (a busAddr) String() string  { return string(a) }

func (m *Mux) goFunc(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

func (m *Mux) acceptLoop() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.shutdownCh:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.log.Error("cluster bus accept", "err", err)
			select {
			case <-m.shutdownCh:
				return
			case <-time.After(50 * time.Millisecond): // e.g. EMFILE: back off
			}
			continue
		}
		c = m.counted(c)
		m.mu.Lock()
		closed := m.isClosed()
		if !closed {
			m.conns[c] = struct{}{}
		}
		m.mu.Unlock()
		if closed {
			c.Close()
			return
		}
		m.goFunc(func() { m.route(c) })
	}
}

func (m *Mux) isClosed() bool {
	select {
	case <-m.shutdownCh:
		return true
	default:
		return false
	}
}

// route reads c's preamble and hands c to its group's layer.
func (m *Mux) route(raw net.Conn) {
	c := raw
	routed := false
	defer func() {
		m.mu.Lock()
		delete(m.conns, raw)
		m.mu.Unlock()
		if !routed {
			c.Close()
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(m.timeout))
	if t := m.tls.Load(); t != nil {
		tc := t.server(raw)
		if tc == nil {
			m.log.Warn("cluster bus: TLS handshake refused", "remote", raw.RemoteAddr())
			return
		}
		c = tc
	}
	group, err := readPreamble(c)
	if err != nil {
		m.log.Debug("cluster bus: bad preamble", "remote", c.RemoteAddr(), "err", err)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if m.tls.Load() != nil && c == raw {
		return // accepted before SetTLS: refuse plaintext
	}
	m.mu.Lock()
	l := m.groups[group]
	m.mu.Unlock()
	if l == nil {
		m.log.Debug("cluster bus: unknown group", "group", group, "remote", c.RemoteAddr())
		return
	}
	timer := time.NewTimer(m.timeout)
	defer timer.Stop()
	select {
	case l.connCh <- c:
		routed = true
	case <-l.closeCh:
	case <-m.shutdownCh:
	case <-timer.C:
		m.log.Warn("cluster bus: group not accepting", "group", group)
	}
}

func readPreamble(r io.Reader) (string, error) {
	var hdr [len(preambleMagic) + 1]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", err
	}
	if string(hdr[:len(preambleMagic)]) != preambleMagic {
		return "", fmt.Errorf("bad magic %q", hdr[:len(preambleMagic)])
	}
	n := int(hdr[len(preambleMagic)])
	if n == 0 {
		return "", errors.New("empty group name")
	}
	name := make([]byte, n)
	if _, err := io.ReadFull(r, name); err != nil {
		return "", err
	}
	return string(name), nil
}

func writePreamble(w io.Writer, group string) error {
	b := make([]byte, 0, len(preambleMagic)+1+len(group))
	b = append(b, preambleMagic...)
	b = append(b, byte(len(group)))
	b = append(b, group...)
	_, err := w.Write(b)
	return err
}

// Layer registers group and returns its stream layer. It panics if group is
// already registered and open, or its name is empty or longer than 255 bytes.
func (m *Mux) Layer(group string) *StreamLayer {
	if group == "" || len(group) > 255 {
		panic(fmt.Sprintf("cluster: bad group name %q", group))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.groups[group]; ok {
		panic(fmt.Sprintf("cluster: group %q registered twice", group))
	}
	l := &StreamLayer{mux: m, group: group, connCh: make(chan net.Conn), closeCh: make(chan struct{})}
	m.groups[group] = l
	return l
}

// Dial opens a connection to the group on the node at addr.
func (m *Mux) Dial(addr, group string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if to, ok := m.dialMap[addr]; ok {
		addr = to
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c = m.counted(c)
	if t := m.tls.Load(); t != nil {
		if c, err = t.client(c, timeout); err != nil {
			return nil, err
		}
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if err := writePreamble(c, group); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// counted wraps c to count its bytes when the mux has stats.
func (m *Mux) counted(c net.Conn) net.Conn {
	s := m.stats.Load()
	if s == nil {
		return c
	}
	return countedConn{Conn: c, stats: s}
}

// Close stops the listener, closes connections whose preamble is still
// being read, closes every layer, and waits for the mux's goroutines.
func (m *Mux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		close(m.shutdownCh)
		for c := range m.conns {
			c.Close()
		}
		layers := make([]*StreamLayer, 0, len(m.groups))
		for _, l := range m.groups {
			layers = append(layers, l)
		}
		m.mu.Unlock()
		err = m.ln.Close()
		for _, l := range layers {
			l.Close()
		}
		m.wg.Wait()
	})
	return err
}

// StreamLayer is one group's view of the mux; it implements
// raft.StreamLayer. Accept returns connections whose preamble named this
// group, and ErrLayerClosed once the layer or the mux is closed.
type StreamLayer struct {
	mux     *Mux
	group   string
	connCh  chan net.Conn
	closeCh chan struct{}
	once    sync.Once
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// Accept waits for the next connection routed to this group.
func (l *StreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.connCh:
		return c, nil
	case <-l.closeCh:
		return nil, ErrLayerClosed
	case <-l.mux.shutdownCh:
		return nil, ErrLayerClosed
	}
}

// Close unregisters the group; later connections naming it are closed.
// It is idempotent.
func (l *StreamLayer) Close() error {
	l.once.Do(func() {
		close(l.closeCh)
		l.mux.mu.Lock()
		if l.mux.groups[l.group] == l {
			delete(l.mux.groups, l.group)
		}
		l.mux.mu.Unlock()
	})
	return nil
}

// Addr is the mux's advertised address.
func (l *StreamLayer) Addr() net.Addr { return l.mux.advertise }

// Dial connects to this group on the node at address.
func (l *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.mux.Dial(string(address), l.group, timeout)
}

// ackingTransport is a shard group's transport as raft sees it: the raft
// bus's (raftbus.go), or the announcing transport (membership.go) with
// without Config.RaftBus, that also reports every follower's
// successful AppendEntries and InstallSnapshot response to the shard's
// replication tracker (replication.go), which WAIT waits on. The hook runs
// on raft's replication goroutine after the response arrived and before
// raft reads it, so an entry raft counts as committed has already been
// recorded for every follower that stored it. It costs one mutex and one
// map update per response.
type ackingTransport struct {
	shardTransport
	acks  *replication
	stats *raftBusCounters // the node's shard AppendEntries counters; nil for the controller
}

// shardTransport is what a shard group's transport offers raft: pre-votes
// and Close besides raft.Transport.
type shardTransport interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

// AppendEntries implements raft.Transport.
func (t ackingTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if t.stats != nil {
		t.stats.appends.Add(1)
		if isHeartbeat(args) {
			t.stats.heartbeats.Add(1)
		}
		t.stats.entries.Add(uint64(len(args.Entries)))
	}
	err := t.shardTransport.AppendEntries(id, target, args, resp)
	if err == nil && resp.Success {
		t.acks.ack(id, args.Term, args.PrevLogEntry+uint64(len(args.Entries)))
	}
	return err
}

// InstallSnapshot implements raft.Transport.
func (t ackingTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := t.shardTransport.InstallSnapshot(id, target, args, resp, data)
	if err == nil && resp.Success {
		t.acks.ack(id, args.Term, args.LastLogIndex)
	}
	return err
}
