package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
)

// Helpers of the slot-move process tests.

// rsCall sends one command to addr on a fresh connection and returns the
// parsed reply (wire.Parse), an error reply as the error.
func rsCall(addr string, args ...string) (any, error) {
	c, err := wire.Dial(addr, "", 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.Timeout = 20 * time.Second
	return adminDo(c, args...)
}

// rsCallRetry is rsCall that asks again, for up to 30 s, while addr
// answers TRYAGAIN (a leader changing: an election or the balancer).
func rsCallRetry(addr string, args ...string) (any, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := rsCall(addr, args...)
		if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// slotMapOf reads the slot map from RAFTSTREAM SLOTS STATUS on addr:
// owner[slot] = shard, and the number of moves in flight.
func slotMapOf(addr string) (owner []int, inFlight int, epoch int64, err error) {
	v, err := rsCall(addr, "RAFTSTREAM", "SLOTS", "STATUS")
	if err != nil {
		return nil, 0, 0, err
	}
	top, _ := v.([]any)
	if len(top) != 6 {
		return nil, 0, 0, fmt.Errorf("RAFTSTREAM SLOTS STATUS: %v", v)
	}
	epoch, _ = top[1].(int64)
	moves, _ := top[3].([]any)
	owner = make([]int, 16384)
	runs, _ := top[5].([]any)
	for _, r := range runs {
		t3, _ := r.([]any)
		f, _ := t3[0].(int64)
		l, _ := t3[1].(int64)
		sh, _ := t3[2].(int64)
		for s := f; s <= l; s++ {
			owner[s] = int(sh)
		}
	}
	return owner, len(moves), epoch, nil
}

// shardLeaders maps each shard to the RESP address of the node that says
// it leads it (RAFTSTREAM STATUS on every node).
func shardLeaders(addrs []string) map[int]string {
	out := map[int]string{}
	for _, a := range addrs {
		v, err := rsCall(a, "RAFTSTREAM", "STATUS")
		if err != nil {
			continue
		}
		rows, _ := v.([]any)
		for _, r := range rows {
			f, _ := r.([]any)
			if len(f) > 1 && fmt.Sprint(f[1]) == "leader" {
				sh, _ := f[0].(int64)
				out[int(sh)] = a
			}
		}
	}
	return out
}

// moveSlot asks addr to move slot to shard and returns the move IDs.
func moveSlot(addr string, slot, to int) ([]int64, error) {
	v, err := rsCall(addr, "RAFTSTREAM", "SLOTS", "MOVE", strconv.Itoa(slot), strconv.Itoa(to))
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, x := range v.([]any) {
		ids = append(ids, x.(int64))
	}
	return ids, nil
}

// waitSlotOwner waits until every node of addrs reports no move in flight
// and slot owned by shard, and every shard of the map has a leader.
func waitSlotOwner(ctx context.Context, addrs []string, slot, shard int) error {
	return waitSlotOwnerLog(ctx, addrs, slot, shard, nil)
}

// waitSlotOwnerLog is waitSlotOwner; every 5 s it passes logf what
// RAFTSTREAM SLOTS STATUS says of the moves in flight.
func waitSlotOwnerLog(ctx context.Context, addrs []string, slot, shard int, logf func(string, ...any)) error {
	next := time.Now().Add(5 * time.Second)
	for {
		if logf != nil && time.Now().After(next) {
			next = time.Now().Add(5 * time.Second)
			for _, a := range addrs {
				if v, err := rsCall(a, "RAFTSTREAM", "SLOTS", "STATUS"); err == nil {
					logf("slot %d still moving; %s says %v", slot, a, v)
				}
			}
		}
		ok := true
		var last string
		for _, a := range addrs {
			owner, inFlight, _, err := slotMapOf(a)
			if err != nil || inFlight > 0 || owner[slot] != shard {
				ok = false
				last = fmt.Sprintf("%s: owner %v, %d in flight, %v", a, ownerOf(owner, slot), inFlight, err)
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slot %d never settled on shard %d: %s", slot, shard, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ownerOf(owner []int, slot int) any {
	if owner == nil {
		return nil
	}
	return owner[slot]
}

// clusterCheck runs redis-cli --cluster check against addr.
func clusterCheck(addr string) (string, error) {
	out, err := exec.Command("redis-cli", "--cluster", "check", addr).CombinedOutput()
	return string(out), err
}

// waitClusterCheck retries redis-cli --cluster check until it exits 0: the
// nodes agree once every one has the new map and the same leaders.
func waitClusterCheck(ctx context.Context, addr string) (string, time.Duration, error) {
	start := time.Now()
	for {
		out, err := clusterCheck(addr)
		if err == nil {
			return out, time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return out, time.Since(start), err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// nodeByAddr returns the node of nodes listening on addr.
func nodeByAddr(nodes []*testkit.Node, addr string) *testkit.Node {
	for _, n := range nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// trimErr shortens an error for a log line.
func trimErr(err error) string {
	s := fmt.Sprint(err)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
