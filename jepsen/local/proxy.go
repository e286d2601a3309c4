package local

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what a Proxy does to the bytes of its link.
type Mode int

// Modes; see the package documentation.
const (
	Pass Mode = iota
	Delay
	Stall
	Blackhole
	Reset
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Delay:
		return "delay"
	case Stall:
		return "stall"
	case Blackhole:
		return "blackhole"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy forwards TCP connections from its loopback listener to a target
// address, applying its current Mode to both directions of every
// connection. Methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	env    Env // where the listener was made and the target is dialed; nil: here

	mu      sync.Mutex
	mode    Mode
	delay   time.Duration
	changed chan struct{} // closed and replaced on every mode change
	conns   map[*conn]struct{}
	closed  bool

	wg sync.WaitGroup // accept loop and every connection's goroutines
}

// conn is one proxied connection: client side c, server side s.
type conn struct {
	c, s  *net.TCPConn
	dirty bool          // lost bytes to a blackhole; guarded by Proxy.mu
	gone  chan struct{} // closed by reset
	once  sync.Once
}

// reset closes both sides with RST (linger 0).
func (cn *conn) reset() {
	cn.once.Do(func() {
		close(cn.gone)
		for _, x := range []*net.TCPConn{cn.c, cn.s} {
			if x != nil {
				_ = x.SetLinger(0)
				_ = x.Close()
			}
		}
	})
}

// NewProxy listens on listen (use "127.0.0.1:0" for a free port) and
// forwards to target, starting in Pass mode.
func NewProxy(listen, target string) (*Proxy, error) { return NewProxyIn(nil, listen, target) }

// Env runs f in a network environment (a network namespace: see
// jepsen/netns), so that the sockets f creates belong to it. A nil Env runs
// f as it is.
type Env func(f func() error) error

func (e Env) do(f func() error) error {
	if e == nil {
		return f()
	}
	return e(f)
}

// NewProxyIn is NewProxy with the listener made, and the target dialed,
// inside env: a proxy in a node's network namespace listens on that
// namespace's loopback and reaches the target from the node's own address,
// so the target sees the node as the peer (and packet filters keyed on
// the node's address still apply).
func NewProxyIn(env Env, listen, target string) (*Proxy, error) {
	var ln net.Listener
	err := env.do(func() (err error) {
		ln, err = net.Listen("tcp", listen)
		return err
	})
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, env: env, changed: make(chan struct{}), conns: map[*conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address; dial it instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Mode returns the current mode and delay.
func (p *Proxy) Mode() (Mode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay
}

// Set changes the mode; delay is used by Delay only. Leaving Blackhole resets
// the connections that lost bytes; entering Reset resets every connection.
// Held (stalled) bytes are released in order when the mode leaves Stall.
func (p *Proxy) Set(m Mode, delay time.Duration) {
	p.mu.Lock()
	var victims []*conn
	for cn := range p.conns {
		if m == Reset || (p.mode == Blackhole && m != Blackhole && cn.dirty) {
			victims = append(victims, cn)
		}
	}
	p.mode, p.delay = m, delay
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	for _, cn := range victims {
		cn.reset()
	}
}

// Close stops accepting, resets every connection and waits for the proxy's
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var all []*conn
	for cn := range p.conns {
		all = append(all, cn)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	err := p.ln.Close()
	for _, cn := range all {
		cn.reset()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		p.wg.Add(1)
		go p.serve(c.(*net.TCPConn))
	}
}

// serve dials the target and runs both directions until either side ends.
func (p *Proxy) serve(c *net.TCPConn) {
	defer p.wg.Done()
	cn := &conn{c: c, gone: make(chan struct{})}
	p.mu.Lock()
	mode, closed := p.mode, p.closed
	p.mu.Unlock()
	if mode == Reset || closed {
		cn.reset()
		return
	}
	var s net.Conn
	err := p.env.do(func() (err error) {
		s, err = net.DialTimeout("tcp", p.target, 5*time.Second)
		return err
	})
	if err != nil {
		cn.reset() // the target is down: the client sees its connection refused
		return
	}
	cn.s = s.(*net.TCPConn)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		cn.reset()
		return
	}
	p.conns[cn] = struct{}{}
	p.mu.Unlock()
	var dirs sync.WaitGroup
	dirs.Add(2)
	go func() { defer dirs.Done(); p.forward(cn, cn.c, cn.s) }()
	go func() { defer dirs.Done(); p.forward(cn, cn.s, cn.c) }()
	dirs.Wait()
	cn.reset()
	p.mu.Lock()
	delete(p.conns, cn)
	p.mu.Unlock()
}

// chunk is bytes read from one side, due at a time.
type chunk struct {
	b  []byte
	at time.Time
}

// forward copies src to dst through the mode: a reader goroutine queues
// chunks (bounded, so a stalled link pushes back on the sender as TCP
// would) and this goroutine delivers them. When either side fails the
// whole connection is reset.
func (p *Proxy) forward(cn *conn, src, dst *net.TCPConn) {
	q := make(chan chunk, 256)
	done := make(chan struct{})
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				mode, delay := p.Mode()
				var at time.Time
				if mode == Delay {
					at = time.Now().Add(delay)
				}
				select {
				case q <- chunk{buf[:n], at}:
				case <-done:
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					return
				}
				cn.reset()
				return
			}
		}
	}()
	defer close(done)
	for ch := range q {
		if !p.deliver(cn, dst, ch) {
			cn.reset()
			return
		}
	}
	_ = dst.CloseWrite() // half-close: the source finished sending
}

// deliver waits until ch may go out under the current mode and writes it;
// it returns false when the connection must end.
func (p *Proxy) deliver(cn *conn, dst *net.TCPConn, ch chunk) bool {
	for {
		p.mu.Lock()
		mode, changed, closed := p.mode, p.changed, p.closed
		if mode == Blackhole {
			cn.dirty = true
		}
		p.mu.Unlock()
		switch {
		case closed:
			return false
		case mode == Blackhole:
			return true // dropped
		case mode == Stall || mode == Reset:
			select {
			case <-changed:
			case <-cn.gone:
				return false
			}
			continue
		}
		if wait := time.Until(ch.at); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-changed:
				t.Stop()
				continue // re-check the mode; the due time stays
			case <-cn.gone:
				t.Stop()
				return false
			}
		}
		_, err := dst.Write(ch.b)
		return err == nil
	}
}
