package engine

import "sort"

// Stream is the value of a stream key: its entries plus the metadata Redis
// keeps in struct stream, and its consumer groups.
//
// NB: the entry storage below is a sorted slice placeholder with the final
// API; it is replaced by the rax + listpack node storage (rax.go,
// listpack.go). Only the methods in the "storage API" section touch it.
type Stream struct {
	Length       uint64 // live (non-deleted) entries
	LastID       ID     // last ID ever added (or set by XSETID)
	FirstID      ID     // first live entry's ID; 0-0 when empty
	MaxDeletedID ID     // highest ID ever deleted/trimmed (max-deleted-entry-id)
	EntriesAdded uint64 // entries ever added (entries-added)

	// Groups are kept sorted by name (Redis iterates its cgroups rax in
	// lexicographic order).
	Groups []*Group

	entries []sliceEntry // placeholder storage, see NB above
}

type sliceEntry struct {
	id     ID
	fields [][]byte
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// ---- storage API --------------------------------------------------------

// Append adds an entry. The caller guarantees id > s.LastID and updates the
// metadata (LastID, EntriesAdded, Length, FirstID) itself via addEntry.
// fields alternates field names and values; the stream copies them.
func (s *Stream) appendEntry(cfg Config, id ID, fields [][]byte) {
	cp := make([][]byte, len(fields))
	for i, f := range fields {
		cp[i] = append([]byte(nil), f...)
	}
	s.entries = append(s.entries, sliceEntry{id, cp})
}

// Iterator walks live entries in ID order (or reverse). ID and Fields are
// valid until the next call to Next; Fields must not be modified.
type Iterator struct {
	s        *Stream
	pos      int
	start    ID
	end      ID
	rev      bool
	ID       ID
	Fields   [][]byte
	finished bool
}

// Iter returns an iterator over live entries with start <= ID <= end.
func (s *Stream) Iter(start, end ID, rev bool) *Iterator {
	it := &Iterator{s: s, start: start, end: end, rev: rev}
	if rev {
		it.pos = sort.Search(len(s.entries), func(i int) bool { return end.Less(s.entries[i].id) }) - 1
	} else {
		it.pos = sort.Search(len(s.entries), func(i int) bool { return !s.entries[i].id.Less(start) })
	}
	return it
}

// Next advances to the next entry, returning false at the end.
func (it *Iterator) Next() bool {
	if it.finished || it.pos < 0 || it.pos >= len(it.s.entries) {
		it.finished = true
		return false
	}
	e := it.s.entries[it.pos]
	if it.rev {
		if e.id.Less(it.start) {
			it.finished = true
			return false
		}
		it.pos--
	} else {
		if it.end.Less(e.id) {
			it.finished = true
			return false
		}
		it.pos++
	}
	it.ID, it.Fields = e.id, e.fields
	return true
}

// Lookup returns the fields of the live entry id.
func (s *Stream) Lookup(id ID) ([][]byte, bool) {
	i := sort.Search(len(s.entries), func(i int) bool { return !s.entries[i].id.Less(id) })
	if i < len(s.entries) && s.entries[i].id == id {
		return s.entries[i].fields, true
	}
	return nil, false
}

// deleteEntry removes a live entry (XDEL semantics: tombstone; the node is
// freed when all its entries are deleted). It does not update metadata.
func (s *Stream) deleteEntry(id ID) bool {
	i := sort.Search(len(s.entries), func(i int) bool { return !s.entries[i].id.Less(id) })
	if i < len(s.entries) && s.entries[i].id == id {
		s.entries = append(s.entries[:i], s.entries[i+1:]...)
		return true
	}
	return false
}

// RaxKeys is the number of listpack nodes (XINFO radix-tree-keys).
// NB: placeholder until the rax storage lands.
func (s *Stream) RaxKeys() int { return (len(s.entries) + 99) / 100 }

// RaxNodes is the number of radix tree nodes (XINFO radix-tree-nodes).
// NB: placeholder until the rax storage lands.
func (s *Stream) RaxNodes() int { return s.RaxKeys() + 1 }
