package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Log entry format, version 1. Every raft.LogCommand entry of a shard holds
// one Batch:
//
//	entry   = version:u8  crc:u32be  body
//	body    = ts:uvarint  nunits:uvarint  unit*nunits
//	unit    = ncmds:uvarint  cmd*ncmds
//	cmd     = argc:uvarint(>=1)  arg*argc
//	arg     = len:uvarint  bytes*len
//
// version is EntryVersion; crc is CRC-32C (Castagnoli) of body; ts is the
// proposing leader's wall clock in unix milliseconds. A batch with zero units
// is a read fence: it changes nothing and proves, once applied, that the
// proposer was leader when it was appended (see DESIGN.md §Reads).
// Nothing may follow the last unit, and varints must be minimal, so each
// batch has exactly one encoding. The encoding is hand-written and
// deterministic (no reflection): equal batches encode to equal bytes, and
// testdata/*.golden pins them so a format change fails a test on purpose.
// A new format gets a new version byte; decoders keep reading old versions.

// EntryVersion is the version byte of entries this build writes.
const EntryVersion byte = 1

// entryHeader is the version byte plus the CRC.
const entryHeader = 1 + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptEntry: a log entry could not be decoded. Apply treats it as
// fatal: a replica must not skip an entry its peers applied.
var ErrCorruptEntry = errors.New("fsm: corrupt log entry")

// Batch is the content of one log entry: the units proposed together and the
// leader's timestamp.
type Batch struct {
	// TS is the leader's clock (unix ms) when it proposed the entry.
	TS int64
	// Units are applied in order; each is atomic.
	Units []Unit
}

// IsFence reports whether b is a read fence (no units).
func (b *Batch) IsFence() bool { return len(b.Units) == 0 }

// EncodeBatch appends the encoding of b to dst. TS must be >= 0 and every
// command must have at least one argument (the name).
func EncodeBatch(dst []byte, b *Batch) []byte {
	if b.TS < 0 {
		panic("fsm: negative batch timestamp")
	}
	start := len(dst)
	dst = slices.Grow(dst, encodedSize(b))
	dst = append(dst, EntryVersion, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(b.TS))
	dst = binary.AppendUvarint(dst, uint64(len(b.Units)))
	for _, u := range b.Units {
		dst = binary.AppendUvarint(dst, uint64(len(u)))
		for _, cmd := range u {
			if len(cmd) == 0 {
				panic("fsm: empty command")
			}
			dst = binary.AppendUvarint(dst, uint64(len(cmd)))
			for _, arg := range cmd {
				dst = binary.AppendUvarint(dst, uint64(len(arg)))
				dst = append(dst, arg...)
			}
		}
	}
	crc := crcOf(dst[start+entryHeader:])
	binary.BigEndian.PutUint32(dst[start+1:], crc)
	return dst
}

// encodedSize is the length of b's encoding (EncodeBatch sizes its buffer
// with it, so that a large entry is not grown by copies).
func encodedSize(b *Batch) int {
	n := entryHeader + uvarintLen(uint64(b.TS)) + uvarintLen(uint64(len(b.Units)))
	for _, u := range b.Units {
		n += uvarintLen(uint64(len(u)))
		for _, cmd := range u {
			n += uvarintLen(uint64(len(cmd)))
			for _, arg := range cmd {
				n += uvarintLen(uint64(len(arg))) + len(arg)
			}
		}
	}
	return n
}

// unitSize is the number of argument bytes a unit adds to an entry, for
// MaxBatchBytes accounting (framing overhead is ignored).
func unitSize(u Unit) int {
	n := 0
	for _, cmd := range u {
		for _, arg := range cmd {
			n += len(arg)
		}
	}
	return n
}

// DecodeBatch decodes one entry. It never panics and never allocates more
// than a small multiple of len(data), whatever the input; errors wrap
// ErrCorruptEntry. The returned arguments are slices of data, not copies,
// so data must not change afterwards; a raft log entry's Data never does.
// The engine copies whatever it keeps of an argument
// (TestEngineKeepsNoArgument), so an applied entry's bytes are not pinned by
// the state. A follower thus applies an entry without copying it; each unit
// allocates only its argument and command slices.
func DecodeBatch(data []byte) (*Batch, error) { return decodeBatch(data, nil) }

// decodeArena holds the slices decoded units are cut from, kept from one
// entry to the next by a replica's apply (machine.batchOf): a follower's
// per-argument slice headers, cut fresh, were a quarter of a cluster node's
// allocated bytes. reset makes the arena's slices available again, so a
// batch decoded from it is valid only until then.
type decodeArena struct {
	batch Batch
	units []Unit
	cmds  [][][]byte
	args  [][]byte
}

// maxArenaSlots bounds what an arena keeps after a big entry (in slice
// headers per kind); an arena that grew past it is dropped at reset.
const maxArenaSlots = 1 << 14

// cut returns n slots of *slab, taking a new slab when the current one is
// full (slices already cut stay valid: they keep the old slab).
func cut[T any](slab *[]T, n int) []T {
	s := *slab
	if cap(s)-len(s) < n {
		s = make([]T, 0, max(n, 2*cap(s), 64))
	}
	out := s[len(s) : len(s)+n : len(s)+n]
	*slab = s[:len(s)+n]
	return out
}

func (a *decodeArena) reset() {
	a.batch = Batch{}
	a.units = resetSlab(a.units)
	a.cmds = resetSlab(a.cmds)
	a.args = resetSlab(a.args)
}

// resetSlab empties s, dropping what its slots pointed to (the entry's
// bytes), or drops s itself if it grew past maxArenaSlots.
func resetSlab[T any](s []T) []T {
	if cap(s) > maxArenaSlots {
		return nil
	}
	clear(s)
	return s[:0]
}

func decodeBatch(data []byte, arena *decodeArena) (*Batch, error) {
	if len(data) < entryHeader {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorruptEntry, len(data))
	}
	if data[0] != EntryVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorruptEntry, data[0])
	}
	body := data[entryHeader:]
	if got, want := crcOf(body), binary.BigEndian.Uint32(data[1:]); got != want {
		return nil, fmt.Errorf("%w: crc %08x, want %08x", ErrCorruptEntry, got, want)
	}
	d := decoder{buf: body, arena: arena}
	ts := d.uvarint()
	if ts > 1<<62 {
		d.fail("timestamp out of range")
	}
	// Each unit takes at least one byte, each command at least two, each
	// argument at least one: bounding counts by the bytes left keeps garbage
	// from requesting huge allocations.
	nunits := d.count(1)
	var b *Batch
	if arena != nil {
		b = &arena.batch
		*b = Batch{TS: int64(ts), Units: cut(&arena.units, nunits)[:0]}
	} else {
		b = &Batch{TS: int64(ts), Units: make([]Unit, 0, nunits)}
	}
	for i := 0; i < nunits && d.err == nil; i++ {
		b.Units = append(b.Units, d.unit(d.count(2)))
	}
	if d.err == nil && len(d.buf) != 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.buf)))
	}
	if d.err != nil {
		return nil, d.err
	}
	return b, nil
}

// decoder reads the body; the first error sticks and later reads return 0.
type decoder struct {
	buf   []byte
	err   error
	arena *decodeArena // where units are cut from; nil: fresh slices
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorruptEntry, msg)
	}
	d.buf = nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 || n != uvarintLen(v) {
		d.fail("bad varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// count reads a count of items that each need at least min bytes.
func (d *decoder) count(min int) int {
	v := d.uvarint()
	if v > uint64(len(d.buf)/min) {
		d.fail(fmt.Sprintf("count %d exceeds remaining %d bytes", v, len(d.buf)))
		return 0
	}
	return int(v)
}

// unit reads the ncmds commands of a unit, their arguments slices of d.buf,
// with one slice backing every command's argv.
func (d *decoder) unit(ncmds int) Unit {
	if d.err != nil {
		return nil
	}
	// First pass: validate the commands and size the buffers.
	scan := decoder{buf: d.buf}
	nargs := 0
	for j := 0; j < ncmds && scan.err == nil; j++ {
		argc := scan.count(1)
		if scan.err == nil && argc == 0 {
			scan.fail("command with no arguments")
		}
		for i := 0; i < argc && scan.err == nil; i++ {
			l, n := binary.Uvarint(scan.buf)
			if n <= 0 || n != uvarintLen(l) || l > uint64(len(scan.buf)-n) {
				scan.fail("bad argument length")
				break
			}
			scan.buf = scan.buf[n+int(l):]
		}
		nargs += argc
	}
	if scan.err != nil {
		d.err, d.buf = scan.err, nil
		return nil
	}
	var (
		args [][]byte
		u    Unit
	)
	if d.arena != nil {
		args, u = cut(&d.arena.args, nargs), cut(&d.arena.cmds, ncmds)
	} else {
		args, u = make([][]byte, nargs), make(Unit, ncmds)
	}
	for j := range u {
		argc := int(d.uvarint())
		argv := args[:argc:argc]
		args = args[argc:]
		for i := range argv {
			l := int(d.uvarint())
			argv[i] = d.buf[:l:l]
			d.buf = d.buf[l:]
		}
		u[j] = argv
	}
	return u
}

// uvarintLen is the length of v's minimal uvarint encoding; the decoder
// rejects longer ones so that every batch has exactly one encoding.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// crcOf is the entry checksum of body.
func crcOf(body []byte) uint32 { return crc32.Checksum(body, castagnoli) }
