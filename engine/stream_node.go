package engine

// A stream node is one listpack holding a run of entries, laid out as
// Redis's t_stream.c does:
//
//	master entry: count, deleted, num-fields, field_1 .. field_N, 0
//	each entry:   flags, ms-diff, seq-diff,
//	              values_1 .. values_N                  (flags & SAMEFIELDS)
//	              num-fields, field_1, value_1, ...     (otherwise)
//	              lp-count
//
// count is the number of live entries, deleted the number of tombstones;
// ms-diff/seq-diff are the entry ID minus the master ID (the node's first
// entry ID, also its rax key) as int64; lp-count is the number of elements
// of the entry minus one, for backward traversal. A node whose last live
// entry is deleted by XDEL is freed.

// Entry flags (STREAM_ITEM_FLAG_*).
const (
	itemDeleted    = 1
	itemSameFields = 2
)

// node is one rax key: the master ID and its listpack.
type node struct {
	master ID     // rax key: ID of the first entry ever stored in the node
	last   ID     // ID of the last entry stored (live or deleted)
	lp     []byte // the listpack; shared with snapshots when gen != rax.gen
	gen    uint64 // rax generation that owns lp (see rax.own)
}

// newNode builds a node holding one entry, as streamAppendItem does when it
// starts a listpack.
func newNode(id ID, fields [][]byte, gen uint64, prealloc int) node {
	size := lpHeaderSize + 1 + 16
	for _, f := range fields {
		size += 2 * lpElementSize(f)
	}
	lp := lpNew(max(size, prealloc))
	lp = lp[:len(lp)-1]
	nf := int64(len(fields) / 2)
	lp = lpEncodeInt(lp, 1) // count
	lp = lpEncodeInt(lp, 0) // deleted
	lp = lpEncodeInt(lp, nf)
	for i := 0; i < len(fields); i += 2 {
		lp = lpEncodeString(lp, fields[i])
	}
	lp = lpEncodeInt(lp, 0) // master terminator
	n := node{master: id, last: id, gen: gen}
	n.lp = appendEntryElems(lp, 4+int(nf), id, id, fields, true)
	return n
}

// appendEntryElems appends one entry (and the EOF byte) to lp, which must
// not end with EOF, and rewrites the header with numEle+the entry's elements.
func appendEntryElems(lp []byte, numEle int, master, id ID, fields [][]byte, same bool) []byte {
	nf := int64(len(fields) / 2)
	flags := int64(0)
	if same {
		flags = itemSameFields
	}
	lp = lpEncodeInt(lp, flags)
	lp = lpEncodeInt(lp, int64(id.Ms-master.Ms))
	lp = lpEncodeInt(lp, int64(id.Seq-master.Seq))
	lpCount := nf + 3
	if same {
		for i := 1; i < len(fields); i += 2 {
			lp = lpEncodeString(lp, fields[i])
		}
		numEle += 3 + int(nf) + 1
	} else {
		lp = lpEncodeInt(lp, nf)
		for _, f := range fields {
			lp = lpEncodeString(lp, f)
		}
		lpCount += nf + 1
		numEle += 4 + 2*int(nf) + 1
	}
	lp = lpEncodeInt(lp, lpCount)
	lp = append(lp, lpEOF)
	lpSetHeader(lp, numEle)
	return lp
}

// counts returns the master entry's live and deleted counters.
func (n *node) counts() (live, deleted int64) {
	live, off := lpInt(n.lp, lpHeaderSize)
	deleted, _ = lpInt(n.lp, off)
	return live, deleted
}

// masterFields appends the master field names to dst and returns them with
// the offset of the node's first entry.
func (n *node) masterFields(dst []lpElem) ([]lpElem, int) {
	off := lpSkip(n.lp, lpHeaderSize)
	off = lpSkip(n.lp, off)
	nf, off := lpInt(n.lp, off)
	for i := int64(0); i < nf; i++ {
		var e lpElem
		e, off = lpDecode(n.lp, off)
		dst = append(dst, e)
	}
	return dst, lpSkip(n.lp, off) // skip the 0 terminator
}

// entryHeader decodes the entry at off: its ID, flags and the offset of its
// body (values, or num-fields for entries with their own fields).
func (n *node) entryHeader(off int) (ID, int64, int) {
	flags, off := lpInt(n.lp, off)
	msd, off := lpInt(n.lp, off)
	seqd, off := lpInt(n.lp, off)
	return ID{n.master.Ms + uint64(msd), n.master.Seq + uint64(seqd)}, flags, off
}

// skipEntryFrom skips an entry body starting at off (as returned by
// entryHeader) and its lp-count, returning the next entry's offset.
func (n *node) skipEntryFrom(off int, flags int64, masterFields int) int {
	k := int64(masterFields)
	if flags&itemSameFields == 0 {
		k, off = lpInt(n.lp, off)
		k *= 2
	}
	for ; k > 0; k-- {
		off = lpSkip(n.lp, off)
	}
	return lpSkip(n.lp, off)
}

// skipEntry returns the offset of the entry after the one at off.
func (n *node) skipEntry(off int, masterFields int) int {
	_, flags, body := n.entryHeader(off)
	return n.skipEntryFrom(body, flags, masterFields)
}

// sameFields reports whether fields' names equal the master fields.
func (n *node) sameFields(fields [][]byte) bool {
	off := lpSkip(n.lp, lpHeaderSize)
	off = lpSkip(n.lp, off)
	nf, off := lpInt(n.lp, off)
	if nf != int64(len(fields)/2) {
		return false
	}
	for i := 0; i < len(fields); i += 2 {
		// Fast path: a short string stored as such compares bytewise.
		if c := n.lp[off]; c&0xC0 == 0x80 {
			l := int(c & 0x3F)
			if string(n.lp[off+1:off+1+l]) != string(fields[i]) {
				return false // an integer-looking name would be stored as an integer
			}
			off += 1 + l + 1
			continue
		}
		var e lpElem
		e, off = lpDecode(n.lp, off)
		if !e.equal(fields[i]) {
			return false
		}
	}
	return true
}

// append adds an entry to the node (the caller owns n.lp and has checked
// the node caps).
func (n *node) append(id ID, fields [][]byte) {
	live, _ := n.counts()
	same := n.sameFields(fields)
	n.lp = lpReplaceInt(n.lp, lpHeaderSize, live+1)
	numEle := lpNumElements(n.lp)
	n.lp = appendEntryElems(n.lp[:len(n.lp)-1], numEle, n.master, id, fields, same)
	n.last = id
}

// find returns the offset of the live entry id in the node.
func (n *node) find(id ID) (int, bool) {
	off := lpSkip(n.lp, lpHeaderSize)
	off = lpSkip(n.lp, off)
	nf, off := lpInt(n.lp, off)
	for i := int64(0); i <= nf; i++ {
		off = lpSkip(n.lp, off)
	}
	for n.lp[off] != lpEOF {
		eid, flags, body := n.entryHeader(off)
		if eid == id {
			return off, flags&itemDeleted == 0
		}
		if id.Less(eid) {
			return 0, false
		}
		off = n.skipEntryFrom(body, flags, int(nf))
	}
	return 0, false
}

// markDeleted sets the deleted flag of the live entry at off and moves one
// from the live to the deleted counter (streamIteratorRemoveEntry). The
// caller owns n.lp.
func (n *node) markDeleted(off int) {
	flags, _ := lpInt(n.lp, off)
	n.lp = lpReplaceInt(n.lp, off, flags|itemDeleted)
	n.addCounts(-1, 1)
}

// addCounts adds dl to the live and dd to the deleted counter.
func (n *node) addCounts(dl, dd int64) {
	live, off := lpInt(n.lp, lpHeaderSize)
	n.lp = lpReplaceInt(n.lp, lpHeaderSize, live+dl)
	off = lpSkip(n.lp, lpHeaderSize)
	deleted, _ := lpInt(n.lp, off)
	n.lp = lpReplaceInt(n.lp, off, deleted+dd)
}
