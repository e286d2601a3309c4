package engine

import (
	"encoding/binary"
	"fmt"
)

// Stream extensions in snapshots (snapshot version 2), written after a
// stream's consumer groups. Integers are varints (encoding/binary):
//
//	idmp       1 byte: 0 = none, 1 = present, then:
//	  duration, maxsize      uvarint (0 = the Config's)
//	  iids-added, iids-duplicates uvarint
//	  producers  uvarint count, then per producer in pid order:
//	    pid        uvarint length + bytes
//	    records    uvarint count, then per record oldest first:
//	      iid        uvarint length + bytes
//	      id         uvarint ms, uvarint seq
//	      at         varint (Unix ms)
//	dead-letter uvarint count, then per group with a setting, in name order:
//	  group name uvarint length + bytes
//	  max-deliveries uvarint
//	  dlq key    uvarint length + bytes
//
// The encoding is deterministic: equal state gives equal bytes.

// appendExtSnapshot appends s's extension state to b.
func (s *Stream) appendExtSnapshot(b []byte) []byte {
	if st := s.idmp; st == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(st.duration))
		b = binary.AppendUvarint(b, uint64(st.maxSize))
		b = binary.AppendUvarint(b, st.added)
		b = binary.AppendUvarint(b, st.dups)
		b = binary.AppendUvarint(b, uint64(len(st.producers)))
		for _, p := range st.producers {
			b = appendGroupString(b, p.pid)
			b = binary.AppendUvarint(b, uint64(len(p.log)))
			for _, r := range p.log {
				b = appendGroupString(b, r.iid)
				b = appendSnapID(b, r.id)
				b = binary.AppendVarint(b, r.at)
			}
		}
	}
	n := 0
	for _, g := range s.Groups {
		if g.DLQMax != 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, g := range s.Groups {
		if g.DLQMax != 0 {
			b = appendGroupString(b, g.Name)
			b = binary.AppendUvarint(b, g.DLQMax)
			b = appendGroupString(b, g.DLQKey)
		}
	}
	return b
}

// loadExtSnapshot decodes what appendExtSnapshot wrote into s (whose groups
// are already loaded) and returns the bytes after it.
func (s *Stream) loadExtSnapshot(b []byte) ([]byte, error) {
	d := groupDecoder{b: b}
	switch d.byte() {
	case 0:
	case 1:
		st := &idmpState{duration: int64(d.uvarint()), maxSize: int64(d.uvarint()),
			added: d.uvarint(), dups: d.uvarint()}
		if st.duration > idmpMaxDuration || st.maxSize > idmpMaxMaxSize {
			d.fail("idmp settings")
		}
		np := d.uvarint()
		if d.err == nil && np > uint64(len(d.b)) {
			d.fail("producer count")
		}
		for i := uint64(0); i < np && d.err == nil; i++ {
			p := &idmpProducer{pid: d.string(), byIID: map[string]ID{}}
			if i > 0 && p.pid <= st.producers[i-1].pid {
				d.fail("producer order")
			}
			nr := d.uvarint()
			if d.err == nil && (nr == 0 || nr > uint64(len(d.b))) {
				d.fail("record count")
			}
			for j := uint64(0); j < nr && d.err == nil; j++ {
				r := idmpRecord{iid: d.string(), id: d.id(), at: d.varint()}
				if _, dup := p.byIID[r.iid]; dup {
					d.fail("duplicate iid")
				}
				p.log = append(p.log, r)
				p.byIID[r.iid] = r.id
			}
			st.producers = append(st.producers, p)
		}
		s.idmp = st
	default:
		d.fail("idmp flag")
	}
	nd := d.uvarint()
	if d.err == nil && nd > uint64(len(s.Groups)) {
		d.fail("dead-letter count")
	}
	prev := ""
	for i := uint64(0); i < nd && d.err == nil; i++ {
		name, max, key := d.string(), d.uvarint(), d.string()
		g := s.lookupGroup([]byte(name))
		if d.err == nil && (g == nil || max == 0 || (i > 0 && name <= prev)) {
			d.fail(fmt.Sprintf("dead-letter setting of %q", name))
			break
		}
		prev = name
		if g != nil {
			g.DLQMax, g.DLQKey = max, key
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return d.b, nil
}
