package engine

import "sort"

// NACK is a pending entry: an entry delivered to a consumer of a group and
// not yet acknowledged (Redis's streamNACK). The same *NACK is held by the
// group PEL and by its owner's consumer PEL.
type NACK struct {
	ID            ID
	DeliveryTime  int64     // Unix ms of the last delivery
	DeliveryCount uint64    // number of deliveries; >= 1 unless set by XCLAIM RETRYCOUNT 0
	Consumer      *Consumer // owner; the consumer PEL that holds this NACK; nil once released by XNACK
	// nackSeq orders owner-less entries in the group's NACK zone (xnack.go):
	// release order; 0 while owned.
	nackSeq uint64
}

// pelChunkMax is the capacity of one chunk of a pelTree. A chunk is split in
// two when it is full, so inserts and deletes move at most this many
// pointers plus one pointer per chunk.
const pelChunkMax = 256

// pelTree is a pending entries list: NACKs ordered by ID with ordered range
// scans. It is a two-level sorted structure (a sorted list of sorted chunks),
// so insert, delete and seek cost O(log n + pelChunkMax + n/pelChunkMax)
// moves, with cheap appends at the end (the common case: deliveries arrive
// in ID order).
//
// Invariant: every chunk is non-empty and sorted; chunks are sorted and do
// not overlap; n is the total number of NACKs.
type pelTree struct {
	chunks [][]*NACK
	n      int
}

func newPEL() *pelTree { return &pelTree{} }

// Len is the number of NACKs.
func (p *pelTree) Len() int { return p.n }

// chunkFor returns the index of the chunk that holds or would hold id: the
// last chunk whose first ID is <= id (0 if none).
func (p *pelTree) chunkFor(id ID) int {
	i := sort.Search(len(p.chunks), func(i int) bool { return id.Less(p.chunks[i][0].ID) })
	if i > 0 {
		i--
	}
	return i
}

// Get returns the NACK for id.
func (p *pelTree) Get(id ID) (*NACK, bool) {
	if p.n == 0 {
		return nil, false
	}
	c := p.chunks[p.chunkFor(id)]
	j := sort.Search(len(c), func(j int) bool { return !c[j].ID.Less(id) })
	if j < len(c) && c[j].ID == id {
		return c[j], true
	}
	return nil, false
}

// Insert adds nk, replacing any NACK with the same ID; it returns the one it
// replaced, if any.
func (p *pelTree) Insert(nk *NACK) *NACK {
	if p.n == 0 {
		p.chunks = append(p.chunks, []*NACK{nk})
		p.n = 1
		return nil
	}
	// Fast path: append at the end.
	last := p.chunks[len(p.chunks)-1]
	if last[len(last)-1].ID.Less(nk.ID) {
		if len(last) < pelChunkMax {
			p.chunks[len(p.chunks)-1] = append(last, nk)
		} else {
			c := make([]*NACK, 1, pelChunkMax)
			c[0] = nk
			p.chunks = append(p.chunks, c)
		}
		p.n++
		return nil
	}
	ci := p.chunkFor(nk.ID)
	c := p.chunks[ci]
	j := sort.Search(len(c), func(j int) bool { return !c[j].ID.Less(nk.ID) })
	if j < len(c) && c[j].ID == nk.ID {
		old := c[j]
		c[j] = nk
		return old
	}
	if len(c) >= pelChunkMax {
		// Split the full chunk in two halves and insert into the right one.
		half := len(c) / 2
		right := make([]*NACK, len(c)-half, pelChunkMax)
		copy(right, c[half:])
		left := make([]*NACK, half, pelChunkMax)
		copy(left, c[:half])
		p.chunks = append(p.chunks, nil)
		copy(p.chunks[ci+2:], p.chunks[ci+1:])
		p.chunks[ci], p.chunks[ci+1] = left, right
		if j > half {
			ci, j, c = ci+1, j-half, right
		} else {
			c = left
		}
	}
	c = append(c, nil)
	copy(c[j+1:], c[j:])
	c[j] = nk
	p.chunks[ci] = c
	p.n++
	return nil
}

// Delete removes the NACK for id and returns it.
func (p *pelTree) Delete(id ID) (*NACK, bool) {
	if p.n == 0 {
		return nil, false
	}
	ci := p.chunkFor(id)
	c := p.chunks[ci]
	j := sort.Search(len(c), func(j int) bool { return !c[j].ID.Less(id) })
	if j >= len(c) || c[j].ID != id {
		return nil, false
	}
	nk := c[j]
	copy(c[j:], c[j+1:])
	c[len(c)-1] = nil
	c = c[:len(c)-1]
	p.n--
	if len(c) == 0 {
		copy(p.chunks[ci:], p.chunks[ci+1:])
		p.chunks[len(p.chunks)-1] = nil
		p.chunks = p.chunks[:len(p.chunks)-1]
		return nk, true
	}
	p.chunks[ci] = c
	// Merge with the next chunk when both are small, so that deleting most
	// entries does not leave many tiny chunks behind.
	if ci+1 < len(p.chunks) && len(c)+len(p.chunks[ci+1]) <= pelChunkMax/2 {
		p.chunks[ci] = append(c, p.chunks[ci+1]...)
		copy(p.chunks[ci+1:], p.chunks[ci+2:])
		p.chunks[len(p.chunks)-1] = nil
		p.chunks = p.chunks[:len(p.chunks)-1]
	}
	return nk, true
}

// First returns the NACK with the smallest ID.
func (p *pelTree) First() (*NACK, bool) {
	if p.n == 0 {
		return nil, false
	}
	return p.chunks[0][0], true
}

// Last returns the NACK with the largest ID.
func (p *pelTree) Last() (*NACK, bool) {
	if p.n == 0 {
		return nil, false
	}
	c := p.chunks[len(p.chunks)-1]
	return c[len(c)-1], true
}

// pelCursor walks a pelTree in ID order. It must not be used after the tree
// is modified, except through Seek.
type pelCursor struct {
	p     *pelTree
	ci, j int
}

// Seek returns a cursor positioned at the first NACK with ID >= start.
func (p *pelTree) Seek(start ID) pelCursor {
	if p.n == 0 {
		return pelCursor{p: p}
	}
	ci := p.chunkFor(start)
	c := p.chunks[ci]
	j := sort.Search(len(c), func(j int) bool { return !c[j].ID.Less(start) })
	if j == len(c) {
		ci, j = ci+1, 0
	}
	return pelCursor{p: p, ci: ci, j: j}
}

// Next returns the NACK under the cursor and advances, or false at the end.
func (cu *pelCursor) Next() (*NACK, bool) {
	if cu.ci >= len(cu.p.chunks) {
		return nil, false
	}
	nk := cu.p.chunks[cu.ci][cu.j]
	cu.j++
	if cu.j >= len(cu.p.chunks[cu.ci]) {
		cu.ci, cu.j = cu.ci+1, 0
	}
	return nk, true
}

// Ascend calls f for each NACK with start <= ID <= end in ID order until f
// returns false. f must not modify the tree.
func (p *pelTree) Ascend(start, end ID, f func(*NACK) bool) {
	cu := p.Seek(start)
	for {
		nk, ok := cu.Next()
		if !ok || end.Less(nk.ID) || !f(nk) {
			return
		}
	}
}
