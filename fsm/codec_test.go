package fsm

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenBatches are pinned encodings: changing the format must change a
// golden file, on purpose, together with EntryVersion.
var goldenBatches = map[string]*Batch{
	"fence": {TS: 1700000000000},
	"single": {TS: 1700000000123, Units: []Unit{
		unit(cmd("XADD", "orders", "*", "id", "42")),
	}},
	"multi": {TS: 1, Units: []Unit{
		unit(cmd("XADD", "orders:dlq", "*", "k", "v"), cmd("XACK", "orders", "billing", "1-1")),
		unit(cmd("XLEN", "s")),
		unit(),
		unit(cmd("SET", "bin", "\x00\xff\r\n"), cmd("GET", "")),
	}},
}

func TestEntryGolden(t *testing.T) {
	for name, b := range goldenBatches {
		t.Run(name, func(t *testing.T) {
			got := EncodeBatch(nil, b)
			path := filepath.Join("testdata", "entry_"+name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(hex.Dump(got)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if hex.Dump(got) != string(want) {
				t.Fatalf("encoding of %q changed (bump EntryVersion and keep decoding the old one):\ngot\n%s\nwant\n%s", name, hex.Dump(got), want)
			}
			dec, err := DecodeBatch(got)
			if err != nil {
				t.Fatal(err)
			}
			if !equalBatch(dec, b) {
				t.Fatalf("round trip: got %+v, want %+v", dec, b)
			}
		})
	}
}

func equalBatch(a, b *Batch) bool {
	if a.TS != b.TS || len(a.Units) != len(b.Units) {
		return false
	}
	for i := range a.Units {
		if len(a.Units[i]) != len(b.Units[i]) {
			return false
		}
		for j := range a.Units[i] {
			if !reflect.DeepEqual(a.Units[i][j], b.Units[i][j]) {
				return false
			}
		}
	}
	return true
}

func TestDecodeRejects(t *testing.T) {
	good := EncodeBatch(nil, goldenBatches["multi"])
	flip := bytes.Clone(good)
	flip[len(flip)-1] ^= 1
	version := bytes.Clone(good)
	version[0] = 9
	// A body that is valid except for a zero-argument command, with a
	// correct CRC, must still be rejected.
	zeroArgc := EncodeBatch(nil, &Batch{TS: 5, Units: []Unit{unit(cmd("X"))}})
	zeroArgc = fixCRC(append(zeroArgc[:entryHeader+2], 1, 0))
	trailing := fixCRC(append(bytes.Clone(good), 0))
	nonMinimal := fixCRC([]byte{EntryVersion, 0, 0, 0, 0, 0x81, 0x00, 0})
	hugeCount := fixCRC([]byte{EntryVersion, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	cases := map[string][]byte{
		"empty":      nil,
		"short":      good[:3],
		"truncated":  good[:len(good)-1],
		"crc":        flip,
		"version":    version,
		"zero argc":  zeroArgc,
		"trailing":   trailing,
		"huge count": hugeCount,
		"nonminimal": nonMinimal,
	}
	for name, data := range cases {
		if _, err := DecodeBatch(data); !errors.Is(err, ErrCorruptEntry) {
			t.Errorf("%s: err = %v, want ErrCorruptEntry", name, err)
		}
	}
}

// fixCRC recomputes the CRC of a hand-made entry.
func fixCRC(e []byte) []byte {
	crc := crcOf(e[entryHeader:])
	e[1], e[2], e[3], e[4] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return e
}

// FuzzDecodeEntry: decoding garbage returns an error, never panics; whatever
// decodes re-encodes to the same bytes (the encoding is canonical).
func FuzzDecodeEntry(f *testing.F) {
	for _, b := range goldenBatches {
		f.Add(EncodeBatch(nil, b))
	}
	f.Add([]byte{EntryVersion, 0, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= entryHeader && data[0] == EntryVersion {
			// Give mutated bodies a valid CRC so the fuzzer reaches the parser.
			data = fixCRC(bytes.Clone(data))
		}
		b, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptEntry) {
				t.Fatalf("error does not wrap ErrCorruptEntry: %v", err)
			}
			return
		}
		if again := EncodeBatch(nil, b); !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs:\n%x\n%x", data, again)
		}
	})
}

// TestDecodeAllocs: decoding an entry allocates per unit, not per command
// (a unit of 16 pipelined XADDs took 2 allocations per command before), and
// does not copy the arguments (they are slices of the entry).
func TestDecodeAllocs(t *testing.T) {
	u := make(Unit, 16)
	for i := range u {
		u[i] = cmd("XADD", "s", "*", "f", "v")
	}
	data := EncodeBatch(nil, &Batch{TS: 5, Units: []Unit{u}})
	avg := testing.AllocsPerRun(500, func() {
		if _, err := DecodeBatch(data); err != nil {
			t.Fatal(err)
		}
	})
	// The Batch, its Units, and the unit's commands and argv headers.
	if avg > 4 {
		t.Fatalf("%.1f allocations to decode one unit of 16 commands, want 4", avg)
	}
	b, err := DecodeBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	// The first command's key: the byte after "XADD" and the key's length.
	if arg := b.Units[0][0][1]; &arg[0] != &data[bytes.Index(data, []byte("XADD\x01s"))+5] {
		t.Fatalf("decoded argument %q is a copy, not a slice of the entry", arg)
	}
}

// TestDecodeArenaReuse: decoding into an arena allocates nothing once the
// arena has grown to the entries' size, a reset arena decodes the next entry
// correctly whatever its shape, and a reset drops the previous entry's
// arguments.
func TestDecodeArenaReuse(t *testing.T) {
	u := make(Unit, 16)
	for i := range u {
		u[i] = cmd("XADD", "s", "*", "f", "v")
	}
	big := EncodeBatch(nil, &Batch{TS: 5, Units: []Unit{u, unit(cmd("XLEN", "s"))}})
	var a decodeArena
	for name, b := range goldenBatches {
		got, err := decodeBatch(EncodeBatch(nil, b), &a)
		if err != nil {
			t.Fatal(err)
		}
		if !equalBatch(got, b) {
			t.Fatalf("%s through a used arena: got %+v, want %+v", name, got, b)
		}
		a.reset()
		if len(a.args) != 0 || cap(a.args) > 0 && a.args[:1][0] != nil {
			t.Fatalf("%s: reset kept an argument", name)
		}
	}
	avg := testing.AllocsPerRun(200, func() {
		if _, err := decodeBatch(big, &a); err != nil {
			t.Fatal(err)
		}
		a.reset()
	})
	if avg != 0 {
		t.Fatalf("%.1f allocations per decode into a grown arena, want 0", avg)
	}
}

// TestEncodeSizesItsBuffer: EncodeBatch allocates the entry once, at its
// final size (it grew it by appends, copying it several times).
func TestEncodeSizesItsBuffer(t *testing.T) {
	u := make(Unit, 256)
	for i := range u {
		u[i] = cmd("XADD", "s", "*", "customer", "c0000001", "amount", "10000")
	}
	b := &Batch{TS: 1 << 40, Units: []Unit{u, u[:3]}}
	var data []byte
	// One allocation (-race adds one); growing by appends took about ten.
	want := 1.0
	if raceEnabled {
		want = 2
	}
	if avg := testing.AllocsPerRun(100, func() { data = EncodeBatch(nil, b) }); avg > want {
		t.Fatalf("%.1f allocations to encode an entry, want %.0f", avg, want)
	}
	if len(data) != encodedSize(b) {
		t.Fatalf("encoded %d bytes, encodedSize %d", len(data), encodedSize(b))
	}
}
