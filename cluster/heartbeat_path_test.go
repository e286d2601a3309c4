package cluster

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestHeartbeatsTakeTheRaftGoroutine: a heartbeat (an AppendEntries without
// entries, previous index or commit index, as raft's heartbeat loop sends)
// sent over loopback TCP to a shard transport must arrive on the consumer
// channel, which only the raft goroutine reads, and never reach a handler
// installed with SetHeartbeatHandler (raft's fast path runs appendEntries
// beside the raft goroutine: hashicorp/raft#695).
func TestHeartbeatsTakeTheRaftGoroutine(t *testing.T) {
	recvTCP, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer recvTCP.Close()
	recv := announcingTransport{recvTCP, &busStats{}}
	fast := make(chan raft.RPC, 1)
	recv.SetHeartbeatHandler(func(rpc raft.RPC) {
		fast <- rpc
		rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	})
	send, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()

	consumed := make(chan raft.RPC, 1)
	go func() {
		select {
		case rpc := <-recv.Consumer():
			consumed <- rpc
			rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
		case <-time.After(20 * time.Second):
		}
	}()
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("leader"), Addr: []byte(send.LocalAddr())},
		Term:      7,
	}
	var resp raft.AppendEntriesResponse
	if err := send.AppendEntries("follower", recv.LocalAddr(), req, &resp); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fast:
		t.Fatal("the heartbeat took the fast path")
	default:
	}
	select {
	case rpc := <-consumed:
		if hb, ok := rpc.Command.(*raft.AppendEntriesRequest); !ok || hb.Term != 7 || len(hb.Entries) != 0 {
			t.Fatalf("consumer got %#v", rpc.Command)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the heartbeat never reached the consumer channel")
	}
	if !resp.Success || resp.Term != 7 {
		t.Fatalf("response %+v", resp)
	}
}
