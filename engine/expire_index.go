package engine

import "math/bits"

// expireIndex orders the keys that have an expiry by (expire-at, key): the
// active expiry cycle walks it from the earliest expiry, DBSIZE counts the
// keys whose expiry has passed, and INFO's avg_ttl needs the sum of the
// expiry times still ahead. All three are O(log n) (the walk O(log n + k)).
//
// It is a treap whose priorities are a hash of (at, key), so the shape is a
// function of the set alone: no randomness enters the engine. Every node
// carries its subtree's size and the 128-bit sum of its expiry times.
//
// Invariant: the index holds (v.expireAt, key) exactly for every key whose
// value has a non-zero expireAt (Engine.setKey, deleteKey and setExpire keep
// it so; TestExpireIndexMatchesKeyspace checks it).
type expireIndex struct {
	root *xnode
}

type xnode struct {
	at          int64
	key         string
	prio        uint64
	left, right *xnode
	size        int
	sumHi       uint64 // sum of at over the subtree, 128 bits
	sumLo       uint64
}

// xless orders index entries by expiry time, then key.
func xless(at1 int64, k1 string, at2 int64, k2 string) bool {
	return at1 < at2 || (at1 == at2 && k1 < k2)
}

func xprio(at int64, key string) uint64 {
	h := uint64(14695981039346656037) ^ uint64(at)
	h *= 1099511628211
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	// A final mix so nearby keys get unrelated priorities.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

func (n *xnode) fix() {
	n.size, n.sumHi, n.sumLo = 1, 0, uint64(n.at)
	for _, c := range [2]*xnode{n.left, n.right} {
		if c != nil {
			n.size += c.size
			var carry uint64
			n.sumLo, carry = bits.Add64(n.sumLo, c.sumLo, 0)
			n.sumHi += c.sumHi + carry
		}
	}
}

// split divides t into the entries before (at, key) and the rest.
func xsplit(t *xnode, at int64, key string) (l, r *xnode) {
	if t == nil {
		return nil, nil
	}
	if xless(t.at, t.key, at, key) {
		t.right, r = xsplit(t.right, at, key)
		t.fix()
		return t, r
	}
	l, t.left = xsplit(t.left, at, key)
	t.fix()
	return l, t
}

// merge joins a and b, every entry of a ordered before every entry of b.
func xmerge(a, b *xnode) *xnode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio >= b.prio:
		a.right = xmerge(a.right, b)
		a.fix()
		return a
	default:
		b.left = xmerge(a, b.left)
		b.fix()
		return b
	}
}

// insert adds (at, key), which must not be in the index.
func (x *expireIndex) insert(at int64, key string) {
	n := &xnode{at: at, key: key, prio: xprio(at, key)}
	n.fix()
	l, r := xsplit(x.root, at, key)
	x.root = xmerge(xmerge(l, n), r)
}

// remove deletes (at, key) if present.
func (x *expireIndex) remove(at int64, key string) {
	x.root = xremove(x.root, at, key)
}

func xremove(t *xnode, at int64, key string) *xnode {
	if t == nil {
		return nil
	}
	switch {
	case t.at == at && t.key == key:
		return xmerge(t.left, t.right)
	case xless(at, key, t.at, t.key):
		t.left = xremove(t.left, at, key)
	default:
		t.right = xremove(t.right, at, key)
	}
	t.fix()
	return t
}

// len is the number of keys with an expiry.
func (x *expireIndex) len() int {
	if x.root == nil {
		return 0
	}
	return x.root.size
}

// upTo returns how many entries expire at or before now, and the 128-bit
// sum of their expiry times.
func (x *expireIndex) upTo(now int64) (n int, hi, lo uint64) {
	for t := x.root; t != nil; {
		if t.at > now {
			t = t.left
			continue
		}
		n++
		var c uint64
		lo, c = bits.Add64(lo, uint64(t.at), 0)
		hi += c
		if l := t.left; l != nil {
			n += l.size
			lo, c = bits.Add64(lo, l.sumLo, 0)
			hi += l.sumHi + c
		}
		t = t.right
	}
	return n, hi, lo
}

// ascend calls f for the entries in order, from the earliest expiry, until
// f returns false.
func (x *expireIndex) ascend(f func(at int64, key string) bool) {
	var stack []*xnode
	for t := x.root; t != nil || len(stack) > 0; {
		for t != nil {
			stack = append(stack, t)
			t = t.left
		}
		t = stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !f(t.at, t.key) {
			return
		}
		t = t.right
	}
}

// avgAhead is the mean of (at - now) over the entries expiring after now,
// rounded down, and their count: INFO keyspace's avg_ttl and expires.
func (x *expireIndex) avgAhead(now int64) (avg int64, n int) {
	if x.root == nil {
		return 0, 0
	}
	past, phi, plo := x.upTo(now)
	n = x.root.size - past
	if n == 0 {
		return 0, 0
	}
	lo, b := bits.Sub64(x.root.sumLo, plo, 0)
	hi := x.root.sumHi - phi - b
	// Every at is below 2^63, so the mean is too and hi < n: Div64 cannot
	// overflow.
	q, _ := bits.Div64(hi, lo, uint64(n))
	return int64(q) - now, n
}
