package resp

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/wire"
)

// Forwarding mode (Config.Forwarding): a client that is not cluster-aware
// talks to any node; a command for a shard led elsewhere is sent on to the
// leader's RESP port and the leader's reply is relayed byte for byte,
// instead of answering MOVED.
//
// Forwarding intercepts exactly the MOVED replies: a command answered MOVED
// was never proposed (the shard said "not leader" before proposing), so
// sending it to the leader cannot apply it twice. If the leader's reply is
// itself MOVED (leadership moved again), it is relayed as is.

// forwarder keeps idle connections to other nodes' RESP ports, per address
// and protocol. Replies are relayed as wire reads them, byte for byte.
type forwarder struct {
	pass string
	mu   sync.Mutex
	idle map[fwdKey][]*wire.Client
}

type fwdKey struct {
	addr  string
	proto int
}

func newForwarder(pass string) *forwarder {
	return &forwarder{pass: pass, idle: map[fwdKey][]*wire.Client{}}
}

// movedAddr returns the address of a MOVED reply.
func movedAddr(r reply) (string, bool) {
	e, ok := r.(*engine.Error)
	if !ok || len(e.Msg) < 6 || e.Msg[:6] != "MOVED " {
		return "", false
	}
	i := bytes.LastIndexByte([]byte(e.Msg), ' ')
	return e.Msg[i+1:], true
}

func (f *forwarder) get(k fwdKey) (*wire.Client, error) {
	f.mu.Lock()
	if l := f.idle[k]; len(l) > 0 {
		c := l[len(l)-1]
		f.idle[k] = l[:len(l)-1]
		f.mu.Unlock()
		return c, nil
	}
	f.mu.Unlock()
	c, err := wire.Dial(k.addr, "", 5*time.Second)
	if err != nil {
		return nil, err
	}
	hello := []string{"HELLO", strconv.Itoa(k.proto)}
	if f.pass != "" {
		hello = append(hello, "AUTH", "default", f.pass)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r, err := c.Do(hello...)
	if err != nil || len(r) == 0 || r[0] == '-' {
		c.Close()
		return nil, fmt.Errorf("forward: HELLO to %s: %q %v", k.addr, r, err)
	}
	return c, nil
}

func (f *forwarder) put(k fwdKey, c *wire.Client) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.idle[k]) >= 16 {
		c.Close()
		return
	}
	f.idle[k] = append(f.idle[k], c)
}

// do sends cmds to addr and returns the raw bytes of the last reply (all
// replies are read). timeout bounds the whole exchange; 0 means no bound
// (blocking commands).
func (f *forwarder) do(addr string, proto int, cmds [][][]byte, timeout time.Duration) ([]byte, error) {
	k := fwdKey{addr, proto}
	c, err := f.get(k)
	if err != nil {
		return nil, err
	}
	var buf []byte
	for _, argv := range cmds {
		buf = wire.AppendCommand(buf, argv)
	}
	if timeout > 0 {
		c.SetDeadline(time.Now().Add(timeout))
	} else {
		c.SetDeadline(time.Time{})
	}
	if err := c.WriteRaw(buf); err != nil {
		c.Close()
		return nil, err
	}
	if timeout <= 0 {
		c.SetDeadline(time.Time{})
	}
	var last []byte
	for range cmds {
		if last, err = c.ReadReply(); err != nil {
			c.Close()
			return nil, err
		}
	}
	f.put(k, c)
	return last, nil
}

func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, l := range f.idle {
		for _, c := range l {
			c.Close()
		}
		delete(f.idle, k)
	}
}

// maybeForward relays cmds to the leader named by a MOVED reply r, when the
// server forwards. It returns the raw reply and true when it did; on a
// forwarding failure the client gets TRYAGAIN (nothing was applied here).
func (s *Server) maybeForward(c *client, r reply, cmds [][][]byte, blocking bool) ([]byte, bool) {
	if s.fwd == nil {
		return nil, false
	}
	addr, ok := movedAddr(r)
	if !ok {
		return nil, false
	}
	timeout := s.cfg.WriteTimeout
	if blocking {
		timeout = 0
	}
	raw, err := s.fwd.do(addr, c.proto, cmds, timeout)
	if err != nil {
		s.log.Debug("forward failed", "addr", addr, "err", err)
		return AppendReply(nil, errorf("TRYAGAIN could not forward to the shard's leader at %s", addr), c.proto), true
	}
	return raw, true
}
