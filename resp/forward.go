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
	for l := f.idle[k]; len(l) > 0; l = f.idle[k] {
		c := l[len(l)-1]
		f.idle[k] = l[:len(l)-1]
		if !c.Stale() {
			f.mu.Unlock()
			return c, nil
		}
		// The peer closed it (a restart): sending on it would fail after
		// the command left, when its outcome can no longer be told.
		c.Close()
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
// (blocking commands). sent is false when the commands never left (no
// connection to addr could be had), so nothing of them ran there.
func (f *forwarder) do(addr string, proto int, cmds [][][]byte, timeout time.Duration) (last []byte, sent bool, err error) {
	k := fwdKey{addr, proto}
	c, err := f.get(k)
	if err != nil {
		return nil, false, err
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
		return nil, true, err
	}
	for range cmds {
		if last, err = c.ReadReply(); err != nil {
			c.Close()
			return nil, true, err
		}
	}
	f.put(k, c)
	return last, true, nil
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

// tryAgainLeaderRaw is errTryAgainLeader as another node relays it.
var tryAgainLeaderRaw = AppendReply(nil, errTryAgainLeader, 2)

// forwardRetryEvery is how often a forwarding node looks for a shard's
// new leader while it holds a command through an election.
const forwardRetryEvery = 25 * time.Millisecond

// maybeForward relays cmds to the leader of their shard when the server
// forwards and r, the reply they got here, says the leader is elsewhere or
// being elected. It returns the raw reply and true when it answered.
//
// A plain client cannot follow a leader change, so an ordinary election is
// hidden from it: when the shard has no leader (TRYAGAIN, here or relayed
// from the node asked), or its leader cannot be reached, the command waits,
// for at most leaderlessRedirectAfter, for a leader to be known and is then
// sent there. Each of those answers means the command was not run, so
// sending it again cannot run it twice. A write whose connection failed
// after it was sent may have run: its client gets UNKNOWN, as for a write
// whose commit was not seen. shard is the commands' shard (-1: none, no
// wait); write says whether they change data.
func (s *Server) maybeForward(c *client, r reply, cmds [][][]byte, shard int, write, blocking bool) ([]byte, bool) {
	if s.fwd == nil {
		return nil, false
	}
	addr, moved := movedAddr(r)
	if !moved && (r != reply(errTryAgainLeader) || shard < 0) {
		return nil, false
	}
	timeout := s.cfg.WriteTimeout
	if blocking {
		timeout = 0
	}
	var last reply = errTryAgainLeader
	for deadline := time.Now().Add(leaderlessRedirectAfter); ; {
		if addr != "" {
			raw, sent, err := s.fwd.do(addr, c.proto, cmds, timeout)
			switch {
			case err == nil && !bytes.Equal(raw, tryAgainLeaderRaw):
				return raw, true
			case err == nil:
				last = errTryAgainLeader
			case sent && write:
				s.log.Debug("forward failed after sending", "addr", addr, "err", err)
				return AppendReply(nil, errUnknownOutcome, c.proto), true
			default:
				s.log.Debug("forward failed", "addr", addr, "err", err)
				last = errorf("TRYAGAIN could not forward to the shard's leader at %s", addr)
			}
		}
		if shard < 0 || time.Now().After(deadline) {
			return AppendReply(nil, last, c.proto), true
		}
		time.Sleep(forwardRetryEvery)
		addr, _ = s.shardLeaderAddr(shard)
	}
}
