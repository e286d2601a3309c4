package cluster

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func ids(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%040d", i))
	}
	return out
}

func memberList(ns []string) []Member {
	var out []Member
	for i, id := range ns {
		out = append(out, Member{ID: id, Host: "127.0.0.1", Port: 7000 + i, Bus: fmt.Sprint("127.0.0.1:", 17000+i)})
	}
	return out
}

// counts returns replicas and preferred leaderships per node.
func counts(shards [][]string) (reps, prefs map[string]int) {
	reps, prefs = map[string]int{}, map[string]int{}
	for _, r := range shards {
		prefs[r[0]]++
		for _, id := range r {
			reps[id]++
		}
	}
	return
}

func TestRebalance(t *testing.T) {
	n3 := ids(3)
	formed := place(memberList(n3), 16, 3).Shards
	if got := rebalance(formed, n3, 3); !reflect.DeepEqual(got, formed) {
		t.Fatalf("formation placement is not a fixed point:\n%v\n%v", formed, got)
	}

	// A fourth node: 12 replicas each, at most 4 per shard moved... and one
	// replica changed per shard at most; preferred leaders 4 each.
	n4 := ids(4)
	got := rebalance(formed, n4, 3)
	reps, prefs := counts(got)
	for _, id := range n4 {
		if reps[id] != 12 || prefs[id] != 4 {
			t.Errorf("node %s: %d replicas, prefers %d; want 12 and 4 (%v)", id[36:], reps[id], prefs[id], got)
		}
	}
	for i := range got {
		moved := 0
		for _, id := range got[i] {
			if !slices.Contains(formed[i], id) {
				moved++
			}
		}
		if moved > 1 || len(got[i]) != 3 {
			t.Errorf("shard %d: %v from %v", i, got[i], formed[i])
		}
	}
	if again := rebalance(got, n4, 3); !reflect.DeepEqual(again, got) {
		t.Errorf("not a fixed point after a join")
	}

	// Draining node 3 again: its replicas go, nothing lands on it.
	back := rebalance(got, n3, 3)
	reps, prefs = counts(back)
	if reps[n4[3]] != 0 || len(reps) != 3 {
		t.Errorf("drained node still placed: %v", back)
	}
	for _, id := range n3 {
		if reps[id] != 16 || prefs[id] < 5 || prefs[id] > 6 {
			t.Errorf("after drain node %s: %d replicas, prefers %d", id[36:], reps[id], prefs[id])
		}
	}

	// Five nodes, RF 5, two dead: sets shrink to the three live nodes.
	n5 := ids(5)
	f5 := place(memberList(n5), 8, 5).Shards
	live := rebalance(f5, n5[:3], 5)
	for i, r := range live {
		if len(r) != 3 || slices.Contains(r, n5[3]) || slices.Contains(r, n5[4]) {
			t.Errorf("shard %d with two dead nodes: %v", i, r)
		}
	}
}
