package engine

import "sort"

// rax is the index of a stream's nodes by master ID. Redis uses a radix tree
// keyed by the 16-byte big-endian ID (ID.Bytes16); a slice sorted by master
// ID gives the same order and seeks, with one Go pointer per node. Removing
// nodes from the head (trimming) reslices, so it is O(1) amortised.
//
// Invariant: nodes are sorted by master, strictly increasing, and every
// entry of nodes[i] is below nodes[i+1].master.
type rax struct {
	nodes []node
	// gen is the current generation. A node whose gen differs shares its
	// listpack with a snapshot and is copied before any in-place change
	// (own); Snapshot bumps gen.
	gen uint64
}

// tail returns the last node, or nil.
func (r *rax) tail() *node {
	if len(r.nodes) == 0 {
		return nil
	}
	return &r.nodes[len(r.nodes)-1]
}

// push appends a node at the tail.
func (r *rax) push(n node) { r.nodes = append(r.nodes, n) }

// own makes n's listpack private to the live stream (copy on write).
func (r *rax) own(n *node) {
	if n.gen == r.gen {
		return
	}
	lp := make([]byte, len(n.lp), len(n.lp)+len(n.lp)/4+64)
	copy(lp, n.lp)
	n.lp, n.gen = lp, r.gen
}

// seekLE returns the index of the last node whose master is <= id, or -1
// (raxSeek "<=").
func (r *rax) seekLE(id ID) int {
	return sort.Search(len(r.nodes), func(i int) bool { return id.Less(r.nodes[i].master) }) - 1
}

// remove deletes node i.
func (r *rax) remove(i int) {
	if i == 0 {
		r.nodes[0] = node{}
		r.nodes = r.nodes[1:]
		return
	}
	copy(r.nodes[i:], r.nodes[i+1:])
	r.nodes[len(r.nodes)-1] = node{}
	r.nodes = r.nodes[:len(r.nodes)-1]
}

// treeNodes counts the nodes of the compressed radix tree (Redis's rax,
// with compressed nodes for runs of single-child bytes and an empty node
// for each key end) holding the nodes' 16-byte master IDs. An empty tree
// has its root only.
func (r *rax) treeNodes() int {
	if len(r.nodes) == 0 {
		return 1
	}
	keys := make([][16]byte, len(r.nodes))
	for i := range r.nodes {
		keys[i] = r.nodes[i].master.Bytes16()
	}
	return raxCount(keys, 0)
}

// raxCount counts the nodes of the subtree for sorted distinct keys that
// share their first d bytes.
func raxCount(keys [][16]byte, d int) int {
	first, last := keys[0], keys[len(keys)-1]
	l := d
	for l < 16 && first[l] == last[l] {
		l++
	}
	n := 0
	if l > d {
		n++ // a compressed node for bytes d..l-1
	}
	if l == 16 {
		return n + 1 // the key's (empty) leaf node
	}
	n++ // the branching node at depth l
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j][l] == keys[i][l] {
			j++
		}
		n += raxCount(keys[i:j], l+1)
		i = j
	}
	return n
}
