package cluster

import "slices"

// rebalance returns the replica sets the cluster should converge to, given
// the current ones (cur[i] is shard i's replicas, first = preferred
// leader), the nodes that may hold replicas (eligible, sorted by ID) and the
// replication factor. It moves as few replicas as it can:
//
//   - replicas on nodes that are not eligible (draining, dead) are dropped
//     and replaced by the least loaded eligible node not in the set;
//   - sets larger than rf (capped at len(eligible)) lose their replicas on
//     the most loaded nodes, smaller ones gain the least loaded nodes;
//   - then, while the most and least loaded nodes differ by more than one
//     replica, one replica moves from the first to the second (new node
//     joining), keeping its position in the set;
//   - finally, while some shard's first replica (its preferred leader)
//     prefers at least two more shards than another of its replicas, the
//     two swap places, so preferred leaderships spread evenly with few
//     moves.
//
// It is pure and deterministic, and a fixed point: rebalance of its own
// output (same eligible set) returns it unchanged, so the controller
// proposes nothing once the cluster has converged. Ties go to the lower ID.
func rebalance(cur [][]string, eligible []string, rf int) [][]string {
	out := make([][]string, len(cur))
	for i, r := range cur {
		out[i] = slices.Clone(r)
	}
	if len(eligible) == 0 {
		return out
	}
	rf = min(rf, len(eligible))
	count := make(map[string]int, len(eligible))
	for _, id := range eligible {
		count[id] = 0
	}
	for i, r := range out {
		if len(r) == 0 {
			continue // a retired shard (shards.go) keeps no replicas
		}
		keep := r[:0:0]
		for _, id := range r {
			if _, ok := count[id]; ok && !slices.Contains(keep, id) {
				keep = append(keep, id)
				count[id]++
			}
		}
		out[i] = keep
	}
	// least returns the eligible node with the fewest replicas not in r;
	// most the one in r with the most.
	least := func(r []string) string {
		best := ""
		for _, id := range eligible {
			if !slices.Contains(r, id) && (best == "" || count[id] < count[best]) {
				best = id
			}
		}
		return best
	}
	for i := range out {
		if len(cur[i]) == 0 {
			continue
		}
		for len(out[i]) > rf {
			k := 0
			for j, id := range out[i] {
				if count[id] >= count[out[i][k]] {
					k = j
				}
			}
			count[out[i][k]]--
			out[i] = slices.Delete(out[i], k, k+1)
		}
		for len(out[i]) < rf {
			id := least(out[i])
			out[i] = append(out[i], id)
			count[id]++
		}
	}
	for iter := 0; iter < len(out)*rf+1; iter++ {
		hi, lo := eligible[0], eligible[0]
		for _, id := range eligible {
			if count[id] > count[hi] {
				hi = id
			}
			if count[id] < count[lo] {
				lo = id
			}
		}
		if count[hi]-count[lo] <= 1 {
			break
		}
		moved := false
		for i := range out {
			if k := slices.Index(out[i], hi); k >= 0 && !slices.Contains(out[i], lo) {
				out[i][k] = lo
				count[hi]--
				count[lo]++
				moved = true
				break
			}
		}
		if !moved {
			break
		}
	}
	// Preferred leaders: starting from the current first replicas, swap a
	// shard's first replica with another of its replicas while that moves
	// a preference from a node with at least two more than the other.
	prefs := make(map[string]int, len(eligible))
	for _, r := range out {
		if len(r) > 0 {
			prefs[r[0]]++
		}
	}
	for iter := 0; iter < len(out)*len(eligible)+1; iter++ {
		swapped := false
		for i := 0; i < len(out) && !swapped; i++ {
			if len(out[i]) == 0 {
				continue
			}
			a := out[i][0]
			for k := 1; k < len(out[i]); k++ {
				if b := out[i][k]; prefs[a]-prefs[b] > 1 {
					out[i][0], out[i][k] = b, a
					prefs[a]--
					prefs[b]++
					swapped = true
					break
				}
			}
		}
		if !swapped {
			break
		}
	}
	return out
}
