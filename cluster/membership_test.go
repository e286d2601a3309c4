package cluster

import (
	"fmt"
	"strings"
	"testing"
)

func members(n int) []Member {
	var out []Member
	for i := n - 1; i >= 0; i-- { // unsorted on purpose
		out = append(out, Member{ID: fmt.Sprintf("%040x", i+1), Host: "127.0.0.1", Port: 7000 + i, Bus: fmt.Sprintf("127.0.0.1:%d", 17000+i)})
	}
	return out
}

func TestPlaceRoundRobin(t *testing.T) {
	m := place(members(3), 16, 3)
	if err := m.check(16); err != nil {
		t.Fatal(err)
	}
	prefer := map[string]int{}
	for i, rs := range m.Shards {
		if len(rs) != 3 || rs[0] != m.Nodes[i%3].ID {
			t.Fatalf("shard %d replicas %v", i, rs)
		}
		prefer[rs[0]]++
	}
	for id, c := range prefer {
		if c < 5 || c > 6 {
			t.Fatalf("node %s preferred for %d shards", id, c)
		}
	}
	for i := 1; i < len(m.Nodes); i++ {
		if m.Nodes[i-1].ID >= m.Nodes[i].ID {
			t.Fatal("nodes not sorted by ID")
		}
	}
	// Replication factor is capped by the node count; order of input does
	// not matter.
	if one := place(members(1), 4, 3); len(one.Shards[0]) != 1 {
		t.Fatalf("1 node: %v", one.Shards[0])
	}
	five := place(members(5), 5, 3)
	again := place(append(members(5)[2:], members(5)[:2]...), 5, 3)
	if fmt.Sprint(five) != fmt.Sprint(again) {
		t.Fatal("placement depends on input order")
	}
	for i := 0; i < 5; i++ {
		hosted := 0
		for _, rs := range five.Shards {
			for _, id := range rs {
				if id == five.Nodes[i].ID {
					hosted++
				}
			}
		}
		if hosted != 3 {
			t.Fatalf("5 nodes × 5 shards × 3 replicas: node %d hosts %d", i, hosted)
		}
	}
}

func TestMembershipCheckRejectsDuplicateAddresses(t *testing.T) {
	ms := members(3)
	ms[1].Port = ms[0].Port
	if err := place(ms, 4, 3).check(4); err == nil || !strings.Contains(err.Error(), "same RESP address") {
		t.Fatalf("duplicate RESP address: %v", err)
	}
	ms = members(3)
	ms[2].Bus = ms[0].Bus
	if err := place(ms, 4, 3).check(4); err == nil || !strings.Contains(err.Error(), "same bus address") {
		t.Fatalf("duplicate bus address: %v", err)
	}
	if err := place(members(3), 4, 3).check(5); err == nil {
		t.Fatal("shard count mismatch accepted")
	}
}
