package engine

// Stream is the value of a stream key: its entries plus the metadata Redis
// keeps in struct stream, and its consumer groups.
//
// Entries live in listpack nodes (listpack.go, stream_node.go) indexed by the master
// entry ID of each node (rax.go). The node list is ordered by master ID and
// holds one Go pointer per node (the listpack buffer), so the garbage
// collector's work does not grow with the number of entries.
type Stream struct {
	Length       uint64 // live (non-deleted) entries
	LastID       ID     // last ID ever added (or set by XSETID)
	FirstID      ID     // first live entry's ID; 0-0 when empty
	MaxDeletedID ID     // highest ID ever deleted (max-deleted-entry-id)
	EntriesAdded uint64 // entries ever added (entries-added)

	// Groups are kept sorted by name (Redis iterates its cgroups rax in
	// lexicographic order).
	Groups []*Group

	// idmp is the idempotent-producer memory (idmp.go); nil until the
	// stream sees IDMP, IDMPAUTO or XCFGSET.
	idmp *idmpState

	rax rax
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// ---- storage API --------------------------------------------------------

// appendEntry adds an entry at the tail, starting a new node exactly when
// Redis's streamAppendItem would. The caller guarantees id > every ID in the
// stream and updates the metadata (LastID, EntriesAdded, Length, FirstID).
// fields alternates field names and values; the stream copies them.
func (s *Stream) appendEntry(cfg Config, id ID, fields [][]byte) {
	r := &s.rax
	n := r.tail()
	if n != nil && !nodeMustSplit(cfg, n, fields) {
		r.own(n)
		n.append(id, fields)
		return
	}
	if n != nil && cap(n.lp) > len(n.lp) {
		// Seal the old tail at its exact size (lpShrinkToFit).
		n.lp, n.gen = append(make([]byte, 0, len(n.lp)), n.lp...), r.gen
	}
	r.push(newNode(id, fields, r.gen, nodePrealloc(cfg, fields)))
}

// nodePrealloc is the capacity a new node starts with, as Redis's
// streamAppendItem preallocates: 4096 bytes, lowered to
// stream-node-max-bytes and to max-entries times the entry's raw size.
func nodePrealloc(cfg Config, fields [][]byte) int {
	pre := 4096
	if cfg.NodeMaxBytes > 0 && cfg.NodeMaxBytes < pre {
		pre = cfg.NodeMaxBytes
	}
	if cfg.NodeMaxEntries > 0 {
		tot := 0
		for _, f := range fields {
			tot += len(f)
		}
		if m := cfg.NodeMaxEntries * tot; m < pre {
			pre = m
		}
	}
	return pre
}

// nodeMustSplit is streamAppendItem's rule for starting a new node: the
// listpack would reach stream-node-max-bytes, or it already holds
// stream-node-max-entries entries (live plus deleted).
func nodeMustSplit(cfg Config, n *node, fields [][]byte) bool {
	maxBytes := cfg.NodeMaxBytes
	if maxBytes <= 0 || maxBytes > streamListpackMaxSize {
		maxBytes = streamListpackMaxSize
	}
	tot := 0
	for _, f := range fields {
		tot += len(f)
	}
	if len(n.lp)+tot >= maxBytes {
		return true
	}
	if cfg.NodeMaxEntries > 0 {
		live, deleted := n.counts()
		if live+deleted >= int64(cfg.NodeMaxEntries) {
			return true
		}
	}
	return false
}

// streamListpackMaxSize is STREAM_LISTPACK_MAX_SIZE: the byte cap used when
// stream-node-max-bytes is 0 or larger.
const streamListpackMaxSize = 1 << 30

// Iterator walks live entries in ID order (or reverse). ID and Fields are
// valid until the next call to Next; Fields must not be modified or
// retained (copy what you keep).
type Iterator struct {
	r          *rax
	start, end ID
	rev        bool
	done       bool

	ni   int // current node index
	off  int // forward: offset of the next entry in the node
	offs []int
	oi   int // reverse: index into offs of the next entry
	cur  *node

	master []lpElem // the current node's master fields
	elems  []lpElem
	buf    []byte
	ends   []int

	ID     ID
	Fields [][]byte
}

// Iter returns an iterator over live entries with start <= ID <= end.
func (s *Stream) Iter(start, end ID, rev bool) *Iterator {
	it := &Iterator{r: &s.rax, start: start, end: end, rev: rev}
	if end.Less(start) || len(s.rax.nodes) == 0 {
		it.done = true
		return it
	}
	if rev {
		it.ni = s.rax.seekLE(end)
		if it.ni < 0 {
			it.done = true
			return it
		}
	} else {
		it.ni = max(s.rax.seekLE(start), 0)
	}
	it.load()
	return it
}

// load prepares the iterator to walk node it.ni.
func (it *Iterator) load() {
	it.cur = &it.r.nodes[it.ni]
	var first int
	it.master, first = it.cur.masterFields(it.master[:0])
	if !it.rev {
		it.off = first
		return
	}
	it.offs = it.offs[:0]
	lp := it.cur.lp
	for off := first; lp[off] != lpEOF; off = it.cur.skipEntry(off, len(it.master)) {
		it.offs = append(it.offs, off)
	}
	it.oi = len(it.offs) - 1
}

// Next advances to the next entry, returning false at the end.
func (it *Iterator) Next() bool {
	for !it.done {
		var off int
		if it.rev {
			if it.oi < 0 {
				if it.ni--; it.ni < 0 {
					it.done = true
					return false
				}
				it.load()
				continue
			}
			off = it.offs[it.oi]
			it.oi--
		} else {
			if it.cur.lp[it.off] == lpEOF {
				if it.ni++; it.ni >= len(it.r.nodes) {
					it.done = true
					return false
				}
				it.load()
				continue
			}
			off = it.off
		}
		id, flags, next := it.cur.entryHeader(off)
		if !it.rev {
			it.off = it.cur.skipEntryFrom(next, flags, len(it.master))
		}
		if flags&itemDeleted != 0 {
			continue
		}
		if it.rev {
			if it.end.Less(id) {
				continue
			}
			if id.Less(it.start) {
				it.done = true
				return false
			}
		} else {
			if id.Less(it.start) {
				continue
			}
			if it.end.Less(id) {
				it.done = true
				return false
			}
		}
		it.ID = id
		it.decodeFields(next, flags)
		return true
	}
	return false
}

// decodeFields fills it.Fields from the entry body at off.
func (it *Iterator) decodeFields(off int, flags int64) {
	lp := it.cur.lp
	it.elems = it.elems[:0]
	if flags&itemSameFields != 0 {
		for _, m := range it.master {
			var v lpElem
			v, off = lpDecode(lp, off)
			it.elems = append(it.elems, m, v)
		}
	} else {
		var nf int64
		nf, off = lpInt(lp, off)
		for i := int64(0); i < 2*nf; i++ {
			var e lpElem
			e, off = lpDecode(lp, off)
			it.elems = append(it.elems, e)
		}
	}
	// Integers are rendered into buf first (it may grow), then sliced.
	it.buf = it.buf[:0]
	it.ends = it.ends[:0]
	for _, e := range it.elems {
		if e.IsInt {
			it.buf = e.appendText(it.buf)
			it.ends = append(it.ends, len(it.buf))
		}
	}
	n := len(it.elems)
	if cap(it.Fields) < n {
		it.Fields = make([][]byte, n)
	}
	it.Fields = it.Fields[:n]
	p, k := 0, 0
	for i, e := range it.elems {
		if e.IsInt {
			end := it.ends[k]
			it.Fields[i] = it.buf[p:end:end]
			p, k = end, k+1
		} else {
			it.Fields[i] = e.Str[:len(e.Str):len(e.Str)]
		}
	}
}

// Lookup returns a copy of the fields of the live entry id.
func (s *Stream) Lookup(id ID) ([][]byte, bool) {
	it := s.Iter(id, id, false)
	if !it.Next() {
		return nil, false
	}
	out := make([][]byte, len(it.Fields))
	for i, f := range it.Fields {
		out[i] = append([]byte(nil), f...)
	}
	return out, true
}

// deleteEntry marks a live entry deleted (XDEL's tombstone); the node is
// freed when its last live entry goes. It does not update metadata.
func (s *Stream) deleteEntry(id ID) bool {
	r := &s.rax
	ni := r.seekLE(id)
	if ni < 0 {
		return false
	}
	n := &r.nodes[ni]
	if n.last.Less(id) {
		return false
	}
	off, ok := n.find(id)
	if !ok {
		return false
	}
	live, _ := n.counts()
	if live == 1 {
		r.remove(ni)
		return true
	}
	r.own(n)
	n.markDeleted(off)
	return true
}

// firstLive returns the first live entry's ID (streamGetEdgeID first,
// skipping tombstones).
func (s *Stream) firstLive() (ID, bool) {
	it := s.Iter(MinID, MaxID, false)
	if it.Next() {
		return it.ID, true
	}
	return ID{}, false
}

// lastLive returns the last live entry's ID.
func (s *Stream) lastLive() (ID, bool) {
	it := s.Iter(MinID, MaxID, true)
	if it.Next() {
		return it.ID, true
	}
	return ID{}, false
}

// RaxKeys is the number of listpack nodes (XINFO radix-tree-keys).
func (s *Stream) RaxKeys() int { return len(s.rax.nodes) }

// RaxNodes is the number of radix tree nodes (XINFO radix-tree-nodes): the
// node count of a compressed radix tree holding the 16-byte master IDs.
func (s *Stream) RaxNodes() int { return s.rax.treeNodes() }
