package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// sampleAppend is an AppendEntriesRequest with every field set.
func sampleAppend() *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("leader-id"), Addr: []byte("127.0.0.1:7001")},
		Term:              9,
		Leader:            []byte("127.0.0.1:7001"),
		PrevLogEntry:      41,
		PrevLogTerm:       8,
		LeaderCommitIndex: 40,
		Entries: []*raft.Log{
			{Index: 42, Term: 9, Type: raft.LogCommand, Data: []byte("batch one"), Extensions: []byte{1, 2}, AppendedAt: time.Unix(0, 1764800000123456789)},
			{Index: 43, Term: 9, Type: raft.LogNoop},
			{Index: 44, Term: 9, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{7}, 300)},
		},
	}
}

// frameBody strips a frame's header, checking its kind, group and call.
func frameBody(t *testing.T, f []byte, kind byte, group uint32, call uint64) []byte {
	t.Helper()
	var k byte
	var g uint32
	var c uint64
	var body []byte
	var err error
	k, g, c, body, err = readFrameBytes(f)
	if err != nil || k != kind || g != group || c != call {
		t.Fatalf("frame header: kind %d group %d call %d err %v", k, g, c, err)
	}
	return body
}

func readFrameBytes(f []byte) (byte, uint32, uint64, []byte, error) {
	var b bytes.Buffer
	b.Write(f)
	k, g, c, body, err := readFrame(bufio.NewReader(&b), nil)
	if err == nil && b.Len() != 0 {
		err = fmt.Errorf("%d bytes after the frame", b.Len())
	}
	return k, g, c, body, err
}

func TestRaftWireRoundTrip(t *testing.T) {
	req := sampleAppend()
	body := frameBody(t, appendAppendRequest(nil, 5, 77, req), frameAppend, 5, 77)
	got, err := decodeAppendRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Fatalf("request round trip:\n got %+v\nwant %+v", got, req)
	}
	// A heartbeat: no entries, no previous entry.
	hb := &raft.AppendEntriesRequest{RPCHeader: req.RPCHeader, Term: 3, Leader: req.Leader}
	got, err = decodeAppendRequest(frameBody(t, appendAppendRequest(nil, 0, 1, hb), frameAppend, 0, 1))
	if err != nil || !reflect.DeepEqual(got, hb) || !isHeartbeat(got) {
		t.Fatalf("heartbeat round trip: %+v %v", got, err)
	}

	for _, resp := range []*raft.AppendEntriesResponse{
		{RPCHeader: req.RPCHeader, Term: 9, LastLog: 44, Success: true},
		{RPCHeader: req.RPCHeader, Term: 10, LastLog: 3, NoRetryBackoff: true},
	} {
		var out raft.AppendEntriesResponse
		var in interned
		if err := decodeAppendResponse(frameBody(t, appendAppendResponse(nil, 5, 78, resp), frameAppendOK, 5, 78), &out, &in); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&out, resp) {
			t.Fatalf("response round trip:\n got %+v\nwant %+v", out, *resp)
		}
	}
	if body := frameBody(t, appendError(nil, 1, 2, "no group"), frameError, 1, 2); string(body) != "no group" {
		t.Fatalf("error frame body %q", body)
	}
}

func TestRaftWireRejectsDamage(t *testing.T) {
	body := frameBody(t, appendAppendRequest(nil, 5, 77, sampleAppend()), frameAppend, 5, 77)
	for cut := 0; cut < len(body); cut++ {
		if _, err := decodeAppendRequest(body[:cut]); err == nil {
			t.Fatalf("a request cut to %d of %d bytes decoded", cut, len(body))
		}
	}
	if _, err := decodeAppendRequest(append(body[:len(body):len(body)], 0)); err == nil {
		t.Fatal("a request with a trailing byte decoded")
	}
	var out raft.AppendEntriesResponse
	var in interned
	resp := frameBody(t, appendAppendResponse(nil, 1, 1, &raft.AppendEntriesResponse{Term: 1, Success: true}), frameAppendOK, 1, 1)
	bad := append([]byte(nil), resp...)
	bad[len(bad)-1] = 4 // an unknown flag
	if decodeAppendResponse(bad, &out, &in) == nil {
		t.Fatal("a response with an unknown flag decoded")
	}
	if _, _, _, _, err := readFrameBytes([]byte{1, 0, 0, 0, 1}); err == nil {
		t.Fatal("a frame shorter than its header was read")
	}
}

// FuzzRaftWire: decoding arbitrary bytes never panics, and what decodes
// encodes back to something that decodes the same.
func FuzzRaftWire(f *testing.F) {
	f.Add(frameBodyOf(appendAppendRequest(nil, 5, 77, sampleAppend())))
	f.Add(frameBodyOf(appendAppendResponse(nil, 5, 77, &raft.AppendEntriesResponse{Term: 2, Success: true})))
	f.Fuzz(func(t *testing.T, body []byte) {
		if req, err := decodeAppendRequest(body); err == nil {
			again, err := decodeAppendRequest(frameBodyOf(appendAppendRequest(nil, 0, 0, req)))
			if err != nil || !reflect.DeepEqual(again, req) {
				t.Fatalf("re-encoded request differs: %+v %v", again, err)
			}
		}
		var resp raft.AppendEntriesResponse
		var in interned
		_ = decodeAppendResponse(body, &resp, &in)
	})
}

func frameBodyOf(f []byte) []byte { return f[frameHeaderLen:] }

// busNode is one end of a raft bus test: a mux, its bus and group
// transports by shard.
type busNode struct {
	mux   *Mux
	bus   *raftBus
	trs   map[int]*busTransport
	stats busStats
}

func newBusNode(t testing.TB, timeout time.Duration, shards ...int) *busNode {
	t.Helper()
	m := newTestMux(t)
	n := &busNode{mux: m, bus: newRaftBus(m, newAddrBook(), slog.New(slog.DiscardHandler), timeout), trs: map[int]*busTransport{}}
	for _, s := range shards {
		n.trs[s] = n.bus.transport(s, testNetTransport(m, s), &n.stats)
	}
	t.Cleanup(func() {
		for _, tr := range n.trs {
			tr.Close()
		}
		n.bus.Close()
	})
	return n
}

// testNetTransport is a group's NetworkTransport on m (the fallback).
func testNetTransport(m *Mux, shard int) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: m.Layer(ShardGroup(shard)), MaxPool: 2, Timeout: 5 * time.Second,
		Logger: newHCLogger(slog.New(slog.DiscardHandler), slog.LevelError),
	})
}

// answer consumes one RPC from c within 10 s and answers it with resp.
func answer(t *testing.T, c <-chan raft.RPC, resp *raft.AppendEntriesResponse) <-chan *raft.AppendEntriesRequest {
	got := make(chan *raft.AppendEntriesRequest, 1)
	go func() {
		select {
		case rpc := <-c:
			req, _ := rpc.Command.(*raft.AppendEntriesRequest)
			got <- req
			rpc.Respond(resp, nil)
		case <-time.After(10 * time.Second):
			got <- nil
		}
	}()
	return got
}

// TestRaftBusCarriesAppendEntries: an AppendEntries of shard 3 reaches the
// peer's shard 3 consumer over the bus, field for field, and raft's answer
// comes back; a heartbeat goes the same way (to the consumer, never a fast
// path), and both count.
func TestRaftBusCarriesAppendEntries(t *testing.T) {
	a, b := newBusNode(t, 5*time.Second, 3), newBusNode(t, 5*time.Second, 3)
	want := &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("b"), Addr: []byte("b:1")}, Term: 9, LastLog: 44, Success: true}
	for _, req := range []*raft.AppendEntriesRequest{sampleAppend(), {RPCHeader: sampleAppend().RPCHeader, Term: 9, Leader: []byte("x")}} {
		got := answer(t, b.trs[3].Consumer(), want)
		var resp raft.AppendEntriesResponse
		if err := a.trs[3].AppendEntries("b", raft.ServerAddress(b.mux.Addr().String()), req, &resp); err != nil {
			t.Fatal(err)
		}
		if r := <-got; !reflect.DeepEqual(r, req) {
			t.Fatalf("peer got %+v, want %+v", r, req)
		}
		if !reflect.DeepEqual(&resp, want) {
			t.Fatalf("response %+v, want %+v", resp, *want)
		}
	}
	st := a.bus.Stats()
	if st.Writes == 0 || st.BytesSent == 0 || st.Fallbacks != 0 {
		t.Fatalf("sender stats %+v", st)
	}
	if st := b.bus.Stats(); st.Received != 2 {
		t.Fatalf("receiver stats %+v", st)
	}
}

// TestRaftBusSharesOneConnection: concurrent calls of 8 groups to one peer
// travel on one connection, and every group gets its own answer.
func TestRaftBusSharesOneConnection(t *testing.T) {
	shards := []int{0, 1, 2, 3, 4, 5, 6, 7}
	a, b := newBusNode(t, 5*time.Second, shards...), newBusNode(t, 5*time.Second, shards...)
	var wg sync.WaitGroup
	errs := make(chan error, len(shards)*20)
	for _, s := range shards {
		go func() {
			for rpc := range b.trs[s].Consumer() {
				req := rpc.Command.(*raft.AppendEntriesRequest)
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: uint64(s)*1000 + req.PrevLogEntry, Success: true}, nil)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				var resp raft.AppendEntriesResponse
				req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: uint64(i + 1), Entries: []*raft.Log{{Index: uint64(i + 2), Term: 1, Data: []byte("x")}}}
				if err := a.trs[s].AppendEntries("b", raft.ServerAddress(b.mux.Addr().String()), req, &resp); err != nil {
					errs <- err
					return
				}
				if resp.LastLog != uint64(s)*1000+uint64(i+1) {
					errs <- fmt.Errorf("shard %d call %d got the answer %d", s, i, resp.LastLog)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	a.bus.mu.Lock()
	peers := len(a.bus.peers)
	a.bus.mu.Unlock()
	b.bus.mu.Lock()
	inbound := len(b.bus.inbound)
	b.bus.mu.Unlock()
	if peers != 1 || inbound != 1 {
		t.Fatalf("%d peers dialed, %d connections accepted; want 1 and 1", peers, inbound)
	}
}

// TestRaftBusFallsBackToTheGroupTransport: a peer that does not accept the
// bus (an older version) gets AppendEntries over the group's own transport.
func TestRaftBusFallsBackToTheGroupTransport(t *testing.T) {
	a := newBusNode(t, 5*time.Second, 2)
	old := newTestMux(t) // no raft bus here: only the group's NetworkTransport
	tr := testNetTransport(old, 2)
	defer tr.Close()
	got := answer(t, tr.Consumer(), &raft.AppendEntriesResponse{Term: 9, Success: true})
	var resp raft.AppendEntriesResponse
	if err := a.trs[2].AppendEntries("old", raft.ServerAddress(old.Addr().String()), sampleAppend(), &resp); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r == nil || r.Term != 9 || !resp.Success {
		t.Fatalf("fallback request %+v, response %+v", r, resp)
	}
	if st := a.bus.Stats(); st.Fallbacks != 1 {
		t.Fatalf("fallbacks %d, want 1", st.Fallbacks)
	}
}

// TestRaftBusFallbackLeavesSharedHeadersAlone: raft reuses a response
// across calls (its heartbeat loop does), so one the bus filled holds the
// header strings the connection shares between groups. A fallback call
// into that response must not write the next peer's header over them.
func TestRaftBusFallbackLeavesSharedHeadersAlone(t *testing.T) {
	a, b := newBusNode(t, 5*time.Second, 2), newBusNode(t, 5*time.Second, 2)
	got := answer(t, b.trs[2].Consumer(), &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("node-b"), Addr: []byte("b:1")}, Term: 9, Success: true})
	var resp raft.AppendEntriesResponse
	if err := a.trs[2].AppendEntries("b", raft.ServerAddress(b.mux.Addr().String()), sampleAppend(), &resp); err != nil {
		t.Fatal(err)
	}
	<-got
	sharedID, sharedAddr := resp.ID, resp.Addr
	old := newTestMux(t) // no raft bus here: the call falls back
	tr := testNetTransport(old, 2)
	defer tr.Close()
	got = answer(t, tr.Consumer(), &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("node-c"), Addr: []byte("c:1")}, Term: 9, Success: true})
	if err := a.trs[2].AppendEntries("old", raft.ServerAddress(old.Addr().String()), sampleAppend(), &resp); err != nil {
		t.Fatal(err)
	}
	<-got
	if string(resp.ID) != "node-c" || string(resp.Addr) != "c:1" {
		t.Fatalf("fallback response header %q %q, want node-c c:1", resp.ID, resp.Addr)
	}
	if string(sharedID) != "node-b" || string(sharedAddr) != "b:1" {
		t.Fatalf("the bus's shared header became %q %q, want node-b b:1", sharedID, sharedAddr)
	}
}

// TestRaftBusNeverWaitsWithoutBound: a call to a group the peer does not
// host fails; one whose group never answers fails after the timeout; a
// group queue that is full answers busy at once; closing the transport
// ends a waiting call.
func TestRaftBusNeverWaitsWithoutBound(t *testing.T) {
	a, b := newBusNode(t, 300*time.Millisecond, 1, 2, 4), newBusNode(t, 300*time.Millisecond, 1, 2)
	peer := raft.ServerAddress(b.mux.Addr().String())
	var resp raft.AppendEntriesResponse
	if err := a.trs[4].AppendEntries("b", peer, sampleAppend(), &resp); err == nil || !strings.Contains(err.Error(), "no group 4") {
		t.Fatalf("unknown group: %v", err)
	}
	start := time.Now()
	err := a.trs[1].AppendEntries("b", peer, sampleAppend(), &resp) // nobody consumes shard 1
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("unanswered call: %v after %v", err, time.Since(start))
	}
	// Fill shard 1's queue (the first request still sits in it).
	for i := 1; i < busGroupQueue; i++ {
		go a.trs[1].AppendEntries("b", peer, sampleAppend(), &raft.AppendEntriesResponse{})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(b.trs[1].group.pending) < busGroupQueue && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.trs[1].AppendEntries("b", peer, sampleAppend(), &resp); err == nil || err.Error() != errBusGroupBsy {
		t.Fatalf("full queue: %v", err)
	}
	if b.bus.Stats().Busy == 0 {
		t.Fatal("busy not counted")
	}
	done := make(chan error, 1)
	go func() { done <- a.trs[2].AppendEntries("b", peer, sampleAppend(), &raft.AppendEntriesResponse{}) }()
	time.Sleep(50 * time.Millisecond)
	a.trs[2].Close()
	select {
	case err := <-done:
		if !errors.Is(err, raft.ErrTransportShutdown) && err == nil {
			t.Fatalf("call ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the waiting call")
	}
	if err := a.trs[2].AppendEntries("b", peer, sampleAppend(), &resp); !errors.Is(err, raft.ErrTransportShutdown) {
		t.Fatalf("call after Close: %v", err)
	}
}

// TestRaftBusRedialsAfterTheConnectionFails: a call waiting when the peer
// goes away fails at once (not after the timeout), and once the peer is
// back the next call dials again.
func TestRaftBusRedialsAfterTheConnectionFails(t *testing.T) {
	a := newBusNode(t, 20*time.Second, 6)
	b := newBusNode(t, 20*time.Second, 6)
	peer := raft.ServerAddress(b.mux.Addr().String())
	got := answer(t, b.trs[6].Consumer(), &raft.AppendEntriesResponse{Term: 1, Success: true})
	var resp raft.AppendEntriesResponse
	if err := a.trs[6].AppendEntries("b", peer, sampleAppend(), &resp); err != nil {
		t.Fatal(err)
	}
	<-got
	done := make(chan error, 1)
	go func() { done <- a.trs[6].AppendEntries("b", peer, sampleAppend(), &raft.AppendEntriesResponse{}) }()
	time.Sleep(50 * time.Millisecond)
	b.bus.mu.Lock()
	for c := range b.bus.inbound {
		c.w.close(io.ErrClosedPipe) // the connection breaks
	}
	b.bus.mu.Unlock()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the call on the broken connection succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call waited on a broken connection")
	}
	// The first request is still queued at b's shard 6; answer it and the next.
	go func() {
		for rpc := range b.trs[6].Consumer() {
			rpc.Respond(&raft.AppendEntriesResponse{Term: 2, Success: true}, nil)
		}
	}()
	if err := a.trs[6].AppendEntries("b", peer, sampleAppend(), &resp); err != nil || resp.Term != 2 {
		t.Fatalf("after redial: %+v %v", resp, err)
	}
}

// TestNodesReplicateOverTheRaftBus: the shards of a 3-node cluster
// replicate over the raft bus (writes and bytes counted, nothing falls
// back), and without RaftBus over the groups' own transports (no bus
// writes) — both replicating every write.
func TestNodesReplicateOverTheRaftBus(t *testing.T) {
	for _, noBus := range []bool{false, true} {
		t.Run(fmt.Sprintf("RaftBus=%v", !noBus), func(t *testing.T) {
			tc := startCluster(t, 3, 2, func(c *Config) { c.RaftBus = !noBus })
			defer tc.close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for shard := range 2 {
				for v := range 5 {
					if err := tc.submitFollowing(ctx, shard, v); err != nil {
						t.Fatal(err)
					}
				}
			}
			var sum RaftBusStats
			var raftReqs uint64
			for _, n := range tc.nodes {
				bs := n.BusStats()
				raftReqs += bs.RaftRequests
				st := bs.RaftBus
				sum.AppendRPCs += st.AppendRPCs
				sum.Entries += st.Entries
				sum.Writes += st.Writes
				sum.BytesSent += st.BytesSent
				sum.Fallbacks += st.Fallbacks
			}
			if sum.AppendRPCs == 0 || sum.Entries < 10 || sum.Fallbacks != 0 {
				t.Fatalf("counters %+v", sum)
			}
			// INFO bus's Raft requests count AppendEntries on either path.
			if raftReqs < sum.AppendRPCs {
				t.Fatalf("bus Raft requests %d < AppendEntries sent %d", raftReqs, sum.AppendRPCs)
			}
			if noBus != (sum.Writes == 0 && sum.BytesSent == 0) {
				t.Fatalf("RaftBus %v but the bus wrote %d times (%d bytes)", !noBus, sum.Writes, sum.BytesSent)
			}
		})
	}
}
