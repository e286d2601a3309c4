package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// Snapshots.
//
// Engine.Snapshot takes a point-in-time view cheaply: keys are listed and
// sorted, each stream's node headers are copied (one small struct per node,
// not per entry) and its listpacks are shared copy-on-write: the stream's
// rax generation is bumped, so the live engine copies a node's listpack
// before it next changes it (rax.own). String values are never modified in
// place. Consumer groups are encoded at Snapshot time (their state is a
// graph of small objects). The view may then be written by another
// goroutine while the engine keeps applying commands.
//
// Encoding (version 3), all integers uvarint unless noted:
//
//	magic "RSNP" | version
//	config: node-max-bytes, node-max-entries,
//	        idmp-duration, idmp-maxsize (version 2)
//	key count, then per key in byte order:
//	  key length, key bytes, kind (1 byte: 1 string, 2 stream)
//	  expire-at (version 3): Unix ms, 0 for none
//	  string: length, bytes
//	  stream: length, last-id (ms, seq), first-id, max-deleted-id,
//	          entries-added, node count, then per node:
//	            master (ms, seq), last (ms, seq), listpack length, listpack
//	          consumer groups (group_codec.go)
//	          stream extensions (version 2, stream_ext_codec.go):
//	            IDMP state and dead-letter settings
//	retention policies (version 3, retention.go)
//	crc32 (Castagnoli) of all preceding bytes, 4 bytes little endian
//
// Node boundaries and listpack bytes are preserved, so a restored stream
// trims, splits and reports radix-tree keys exactly as the original, and
// equal engine state always encodes to equal bytes. Restore also reads
// version 1 (no IDMP configuration, no stream extensions) and version 2 (no
// expiries).

const (
	snapMagic   = "RSNP"
	snapVersion = 3
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot is returned (wrapped) by Restore for input that is not a
// valid snapshot.
var ErrBadSnapshot = errors.New("engine: bad snapshot")

// Snapshot is a point-in-time view of an engine (see Engine.Snapshot).
type Snapshot struct {
	cfg       Config
	keys      []snapKey
	retention []*retentionPolicy // the table's rows are never changed in place
}

type snapKey struct {
	key string
	v   Value       // Str shared (immutable); Stream nil
	st  *streamSnap // for streams
}

type streamSnap struct {
	meta   Stream // metadata only (rax and Groups unset)
	nodes  []node
	groups []byte
	ext    []byte // stream_ext_codec.go
}

// Snapshot returns a point-in-time view of the engine. Its cost is
// O(keys log keys + nodes + consumer-group state), independent of the
// number of entries.
func (e *Engine) Snapshot() *Snapshot {
	sn := &Snapshot{cfg: e.cfg, keys: make([]snapKey, 0, len(e.keys)), retention: slices.Clone(e.ret.policies)}
	for _, k := range e.sortedKeys() {
		sn.keys = append(sn.keys, e.snapKey(k, true))
	}
	return sn
}

// snapKey is the point-in-time view of key (which must exist). With cow
// the stream's listpacks become copy-on-write for the live engine, so the
// view may be written later; without, it must be written before the next
// change to the key (and nothing is changed: safe under a read lock).
func (e *Engine) snapKey(k string, cow bool) snapKey {
	v := e.keys[k]
	sk := snapKey{key: k, v: Value{Kind: v.Kind, Str: v.Str, expireAt: v.expireAt}}
	if v.Kind == KindStream {
		s := v.Stream
		st := &streamSnap{nodes: slices.Clone(s.rax.nodes), groups: s.appendGroupsSnapshot(nil),
			ext: s.appendExtSnapshot(nil)}
		st.meta = Stream{Length: s.Length, LastID: s.LastID, FirstID: s.FirstID,
			MaxDeletedID: s.MaxDeletedID, EntriesAdded: s.EntriesAdded}
		if cow {
			s.rax.gen++
		}
		sk.st = st
	}
	return sk
}

// WriteTo writes the snapshot's encoding to w.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	var total int64
	crc := uint32(0)
	buf := make([]byte, 0, 64<<10)
	flush := func(force bool) error {
		if len(buf) == 0 || (!force && len(buf) < 48<<10) {
			return nil
		}
		crc = crc32.Update(crc, crcTable, buf)
		n, err := w.Write(buf)
		total += int64(n)
		buf = buf[:0]
		return err
	}
	buf = append(buf, snapMagic...)
	buf = binary.AppendUvarint(buf, snapVersion)
	buf = binary.AppendUvarint(buf, uint64(sn.cfg.NodeMaxBytes))
	buf = binary.AppendUvarint(buf, uint64(sn.cfg.NodeMaxEntries))
	buf = binary.AppendUvarint(buf, uint64(sn.cfg.IdmpDuration))
	buf = binary.AppendUvarint(buf, uint64(sn.cfg.IdmpMaxSize))
	buf = binary.AppendUvarint(buf, uint64(len(sn.keys)))
	for _, k := range sn.keys {
		buf = binary.AppendUvarint(buf, uint64(len(k.key)))
		buf = append(buf, k.key...)
		buf = append(buf, byte(k.v.Kind))
		buf = binary.AppendUvarint(buf, uint64(k.v.expireAt))
		if k.v.Kind == KindString {
			buf = binary.AppendUvarint(buf, uint64(len(k.v.Str)))
			buf = append(buf, k.v.Str...)
			if err := flush(false); err != nil {
				return total, err
			}
			continue
		}
		m := &k.st.meta
		buf = binary.AppendUvarint(buf, m.Length)
		for _, id := range []ID{m.LastID, m.FirstID, m.MaxDeletedID} {
			buf = appendSnapID(buf, id)
		}
		buf = binary.AppendUvarint(buf, m.EntriesAdded)
		buf = binary.AppendUvarint(buf, uint64(len(k.st.nodes)))
		for i := range k.st.nodes {
			n := &k.st.nodes[i]
			buf = appendSnapID(buf, n.master)
			buf = appendSnapID(buf, n.last)
			buf = binary.AppendUvarint(buf, uint64(len(n.lp)))
			buf = append(buf, n.lp...)
			if err := flush(false); err != nil {
				return total, err
			}
		}
		buf = append(buf, k.st.groups...)
		buf = append(buf, k.st.ext...)
		if err := flush(false); err != nil {
			return total, err
		}
	}
	buf = appendRetentionSnapshot(buf, sn.retention)
	if err := flush(true); err != nil {
		return total, err
	}
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], crc)
	n, err := w.Write(tail[:])
	return total + int64(n), err
}

// appendSnapID appends id as the snapshot encodings write IDs: uvarint ms,
// uvarint seq.
func appendSnapID(b []byte, id ID) []byte {
	b = binary.AppendUvarint(b, id.Ms)
	return binary.AppendUvarint(b, id.Seq)
}

// snapDecoder reads a snapshot body; the first error sticks.
type snapDecoder struct {
	b       []byte
	err     error
	version uint64
}

func (d *snapDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadSnapshot, what)
	}
	d.b = nil
}

func (d *snapDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *snapDecoder) bytes(n uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *snapDecoder) id(what string) ID {
	return ID{d.uvarint(what), d.uvarint(what)}
}

// Restore decodes an engine written by Snapshot.WriteTo, verifying its
// checksum and the structure of every node.
func Restore(r io.Reader) (*Engine, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(data) < len(snapMagic)+4 || string(data[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: magic", ErrBadSnapshot)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	d := &snapDecoder{b: body[len(snapMagic):]}
	v := d.uvarint("version")
	if d.err == nil && (v < 1 || v > snapVersion) {
		return nil, fmt.Errorf("%w: version %d", ErrBadSnapshot, v)
	}
	d.version = v
	cfg := Config{NodeMaxBytes: int(d.uvarint("config")), NodeMaxEntries: int(d.uvarint("config"))}
	if v >= 2 {
		cfg.IdmpDuration, cfg.IdmpMaxSize = int(d.uvarint("config")), int(d.uvarint("config"))
	}
	e := New(cfg)
	nk := d.uvarint("key count")
	prev := ""
	for i := uint64(0); i < nk && d.err == nil; i++ {
		key := string(d.bytes(d.uvarint("key"), "key"))
		if i > 0 && key <= prev {
			d.fail("key order")
			break
		}
		prev = key
		kind := d.bytes(1, "kind")
		var at uint64
		if v >= 3 {
			at = d.uvarint("expire-at")
			if at > math.MaxInt64 {
				d.fail("expire-at")
			}
		}
		if d.err != nil {
			break
		}
		switch Kind(kind[0]) {
		case KindString:
			str := d.bytes(d.uvarint("string"), "string")
			e.setKey(key, &Value{Kind: KindString, Str: slices.Clone(str), expireAt: int64(at)})
		case KindStream:
			s, err := d.stream()
			if err != nil {
				return nil, err
			}
			if d.err == nil {
				e.setKey(key, &Value{Kind: KindStream, Stream: s, expireAt: int64(at)})
			}
		default:
			d.fail("kind")
		}
	}
	if v >= 3 && d.err == nil {
		e.ret.policies = d.retention()
		e.retrack()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	e.TakeSignaled() // setKey's: nobody waits on a restored engine yet
	return e, nil
}

// stream decodes one stream and checks it.
func (d *snapDecoder) stream() (*Stream, error) {
	s := NewStream()
	s.Length = d.uvarint("length")
	s.LastID = d.id("last-id")
	s.FirstID = d.id("first-id")
	s.MaxDeletedID = d.id("max-deleted-id")
	s.EntriesAdded = d.uvarint("entries-added")
	nn := d.uvarint("node count")
	if nn > uint64(len(d.b)) {
		d.fail("node count")
		return nil, d.err
	}
	s.rax.nodes = make([]node, 0, nn)
	var live uint64
	for j := uint64(0); j < nn && d.err == nil; j++ {
		n := node{master: d.id("master"), last: d.id("last")}
		n.lp = slices.Clone(d.bytes(d.uvarint("listpack"), "listpack"))
		if d.err != nil {
			break
		}
		if j > 0 && !s.rax.nodes[j-1].last.Less(n.master) {
			d.fail("node order")
			break
		}
		c, err := checkNode(&n)
		if err != nil {
			d.fail(err.Error())
			break
		}
		live += uint64(c)
		s.rax.nodes = append(s.rax.nodes, n)
	}
	if d.err != nil {
		return nil, d.err
	}
	if live != s.Length {
		d.fail("stream length")
		return nil, d.err
	}
	rest, err := s.loadGroupsSnapshot(d.b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if d.version >= 2 {
		if rest, err = s.loadExtSnapshot(rest); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
		}
	}
	d.b = rest
	return s, nil
}

// checkNode walks a decoded node and verifies its listpack framing, master
// entry, counters and last ID; it returns the live count.
func checkNode(n *node) (live int64, err error) {
	defer func() {
		if recover() != nil {
			err = errors.New("corrupt listpack")
		}
	}()
	lp := n.lp
	if len(lp) < lpHeaderSize+1 || int(binary.LittleEndian.Uint32(lp)) != len(lp) || lp[len(lp)-1] != lpEOF {
		return 0, errors.New("listpack framing")
	}
	live, deleted := n.counts()
	mf, off := n.masterFields(nil)
	var gotLive, gotDeleted int64
	var last ID
	first := true
	for lp[off] != lpEOF {
		id, flags, body := n.entryHeader(off)
		if first && id != n.master {
			return 0, errors.New("master id")
		}
		if !first && !last.Less(id) {
			return 0, errors.New("entry order")
		}
		first, last = false, id
		if flags&itemDeleted != 0 {
			gotDeleted++
		} else {
			gotLive++
		}
		off = n.skipEntryFrom(body, flags, len(mf))
	}
	if off != len(lp)-1 || first || last != n.last || gotLive != live || gotDeleted != deleted {
		return 0, errors.New("node counters")
	}
	return live, nil
}
