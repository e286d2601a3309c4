package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Consumer-group snapshot encoding (version 1), written after a stream's
// entries by snapshot.go. All integers are varints (encoding/binary):
//
//	groups     uvarint count, then per group in name order:
//	  name       uvarint length + bytes
//	  last-id    uvarint ms, uvarint seq
//	  entries-read varint (-1 = unknown)
//	  consumers  uvarint count, then per consumer in name order:
//	    name       uvarint length + bytes
//	    seen-time  varint (Unix ms)
//	    active-time varint (Unix ms, -1 = never)
//	  pel        uvarint count, then per NACK in ID order:
//	    id         uvarint ms, uvarint seq
//	    delivery-time  varint (Unix ms)
//	    delivery-count uvarint
//	    owner      uvarint index into this group's consumers; the number of
//	               consumers for an entry released by XNACK (no owner),
//	               then its NACK-zone rank: uvarint, 1 for the first
//	               released (xnack.go)
//
// Consumer PELs are not written: they are rebuilt from the owners, as Redis's
// RDB format does. The encoding is deterministic: equal group state gives
// equal bytes.
const groupCodecVersion = 1

// errGroupSnapshot is returned (wrapped) for any malformed group snapshot.
var errGroupSnapshot = errors.New("engine: malformed consumer-group snapshot")

// appendGroupsSnapshot appends the encoding of all of s's groups to b.
func (s *Stream) appendGroupsSnapshot(b []byte) []byte {
	b = append(b, groupCodecVersion)
	b = binary.AppendUvarint(b, uint64(len(s.Groups)))
	for _, g := range s.Groups {
		b = appendGroupString(b, g.Name)
		b = appendSnapID(b, g.LastID)
		b = binary.AppendVarint(b, g.EntriesRead)
		b = binary.AppendUvarint(b, uint64(len(g.Consumers)))
		index := make(map[*Consumer]uint64, len(g.Consumers))
		for i, c := range g.Consumers {
			index[c] = uint64(i)
			b = appendGroupString(b, c.Name)
			b = binary.AppendVarint(b, c.SeenTime)
			b = binary.AppendVarint(b, c.ActiveTime)
		}
		b = binary.AppendUvarint(b, uint64(g.PEL.Len()))
		ranks := nackZoneRanks(g)
		cu := g.PEL.Seek(MinID)
		for {
			nk, ok := cu.Next()
			if !ok {
				break
			}
			b = appendSnapID(b, nk.ID)
			b = binary.AppendVarint(b, nk.DeliveryTime)
			b = binary.AppendUvarint(b, nk.DeliveryCount)
			if nk.Consumer == nil {
				b = binary.AppendUvarint(b, uint64(len(g.Consumers)))
				b = binary.AppendUvarint(b, ranks[nk])
				continue
			}
			b = binary.AppendUvarint(b, index[nk.Consumer])
		}
	}
	return b
}

// loadGroupsSnapshot decodes groups written by appendGroupsSnapshot into s
// (replacing s.Groups) and returns the bytes after them.
func (s *Stream) loadGroupsSnapshot(b []byte) ([]byte, error) {
	d := groupDecoder{b: b}
	if v := d.byte(); d.err == nil && v != groupCodecVersion {
		return nil, fmt.Errorf("%w: version %d", errGroupSnapshot, v)
	}
	ng := d.uvarint()
	if d.err == nil && ng > uint64(len(d.b)) {
		d.fail("group count")
	}
	if d.err != nil {
		return nil, d.err
	}
	groups := make([]*Group, 0, ng)
	for i := uint64(0); i < ng && d.err == nil; i++ {
		name := d.string()
		if i > 0 && name <= groups[i-1].Name {
			d.fail("group order")
		}
		g := newGroup(name, d.id(), d.varint())
		nc := d.uvarint()
		if d.err == nil && nc > uint64(len(d.b)) {
			d.fail("consumer count")
		}
		for j := uint64(0); j < nc && d.err == nil; j++ {
			c := &Consumer{Name: d.string(), SeenTime: d.varint(), ActiveTime: d.varint(), PEL: newPEL()}
			if j > 0 && c.Name <= g.Consumers[j-1].Name {
				d.fail("consumer order")
			}
			g.Consumers = append(g.Consumers, c)
		}
		np := d.uvarint()
		if d.err == nil && np > uint64(len(d.b)) {
			d.fail("pel count")
		}
		var prev ID
		for j := uint64(0); j < np && d.err == nil; j++ {
			nk := &NACK{ID: d.id(), DeliveryTime: d.varint(), DeliveryCount: d.uvarint()}
			owner := d.uvarint()
			if d.err != nil {
				break
			}
			if owner > uint64(len(g.Consumers)) || (j > 0 && !prev.Less(nk.ID)) {
				d.fail("pel record")
				break
			}
			prev = nk.ID
			g.PEL.Insert(nk)
			if owner == uint64(len(g.Consumers)) {
				nk.nackSeq = d.uvarint()
				if d.err == nil && (nk.nackSeq == 0 || nk.nackSeq > np) {
					d.fail("nack rank")
				}
				g.nackSeq = max(g.nackSeq, nk.nackSeq)
				continue
			}
			nk.Consumer = g.Consumers[owner]
			nk.Consumer.PEL.Insert(nk)
		}
		groups = append(groups, g)
	}
	if d.err != nil {
		return nil, d.err
	}
	s.Groups = groups
	return d.b, nil
}

func appendGroupString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// groupDecoder reads varint fields, remembering the first error.
type groupDecoder struct {
	b   []byte
	err error
}

func (d *groupDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errGroupSnapshot, what)
	}
}

func (d *groupDecoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *groupDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *groupDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *groupDecoder) id() ID {
	return ID{Ms: d.uvarint(), Seq: d.uvarint()}
}

func (d *groupDecoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("truncated string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// nackZoneRanks numbers g's owner-less entries 1, 2, ... in release order,
// so that equal NACK zones encode to equal bytes whatever sequence numbers
// they were given.
func nackZoneRanks(g *Group) map[*NACK]uint64 {
	var zone []*NACK
	g.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
		if nk.Consumer == nil {
			zone = append(zone, nk)
		}
		return true
	})
	if len(zone) == 0 {
		return nil
	}
	claimOrder(zone)
	ranks := make(map[*NACK]uint64, len(zone))
	for i, nk := range zone {
		ranks[nk] = uint64(i + 1)
	}
	return ranks
}
