package cluster

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// GossipGroup is the bus group carrying memberlist's streams (push-pull
// state exchanges, TCP probes) when gossip rides the bus.
const GossipGroup = "gossip"

// busGossipTransport is memberlist's transport on the cluster bus port:
// its streams are bus connections of the "gossip" group (so they share the
// bus listener, its TLS and its fault-injection dial map), its datagrams
// are UDP on the same port number as the bus. One port number, TCP and
// UDP, is all a cluster needs open between its nodes.
type busGossipTransport struct {
	mux     *Mux
	layer   *StreamLayer
	udp     *net.UDPConn
	stats   *busStats
	advIP   net.IP
	advPort int

	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	stopCh   chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

var _ memberlist.Transport = (*busGossipTransport)(nil)

// newBusGossipTransport listens for gossip datagrams on bindHost:port (the
// bus listener's host and port) and for gossip streams on the mux, and
// advertises advIP:advPort (the bus's advertised port).
func newBusGossipTransport(mux *Mux, bindHost string, port int, advIP net.IP, advPort int, stats *busStats) (*busGossipTransport, error) {
	ua, err := net.ResolveUDPAddr("udp", net.JoinHostPort(bindHost, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("gossip: UDP on the bus port: %w", err)
	}
	for size := 2 << 20; size > 0; size /= 2 { // as memberlist's own transport
		if udp.SetReadBuffer(size) == nil {
			break
		}
	}
	t := &busGossipTransport{mux: mux, layer: mux.Layer(GossipGroup), udp: udp, stats: stats, advIP: advIP, advPort: advPort,
		packetCh: make(chan *memberlist.Packet), streamCh: make(chan net.Conn), stopCh: make(chan struct{})}
	t.wg.Add(2)
	go t.readPackets()
	go t.acceptStreams()
	return t, nil
}

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *busGossipTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return t.advIP, t.advPort, nil
}

// WriteTo implements memberlist.Transport.
func (t *busGossipTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return time.Time{}, err
	}
	_, err = t.udp.WriteTo(b, ua)
	if err == nil {
		t.stats.gossipPackets.Add(1)
		t.stats.sent.Add(uint64(len(b)))
	}
	return time.Now(), err
}

// PacketCh implements memberlist.Transport.
func (t *busGossipTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout implements memberlist.Transport: a bus connection to the
// gossip group of the node at addr.
func (t *busGossipTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	t.stats.gossipStreams.Add(1)
	return t.mux.Dial(addr, GossipGroup, timeout)
}

// StreamCh implements memberlist.Transport.
func (t *busGossipTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown implements memberlist.Transport.
func (t *busGossipTransport) Shutdown() error {
	t.stopOnce.Do(func() {
		close(t.stopCh)
		t.udp.Close()
		t.layer.Close()
	})
	t.wg.Wait()
	return nil
}

func (t *busGossipTransport) readPackets() {
	defer t.wg.Done()
	for {
		buf := make([]byte, 65536)
		k, from, err := t.udp.ReadFrom(buf)
		ts := time.Now()
		if err != nil {
			select {
			case <-t.stopCh:
				return
			case <-time.After(10 * time.Millisecond): // a transient socket error: do not spin
			}
			continue
		}
		t.stats.received.Add(uint64(k))
		if k < 1 {
			continue
		}
		select {
		case t.packetCh <- &memberlist.Packet{Buf: buf[:k], From: from, Timestamp: ts}:
		case <-t.stopCh:
			return
		}
	}
}

func (t *busGossipTransport) acceptStreams() {
	defer t.wg.Done()
	for {
		c, err := t.layer.Accept()
		if err != nil {
			return
		}
		select {
		case t.streamCh <- c:
		case <-t.stopCh:
			c.Close()
			return
		}
	}
}
