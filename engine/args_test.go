package engine_test

import (
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/engine"
)

// TestParseInt: Redis's string2ll accepts exactly the canonical decimal form
// of an int64.
func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		s  string
		v  int64
		ok bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-7", -7, true}, {"1234567890", 1234567890, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"123456789012345678901", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"+1", 0, false}, {"01", 0, false}, {"00", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"1a", 0, false}, {"1e3", 0, false}, {"0x10", 0, false}, {"1_000", 0, false},
	} {
		if v, ok := engine.ParseInt([]byte(tc.s)); v != tc.v || ok != tc.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.s, v, ok, tc.v, tc.ok)
		}
	}
	seed := int64(1)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for range 200000 {
		b := make([]byte, 1+rng.Intn(21))
		for i := range b {
			b[i] = "-+ 0123456789"[rng.Intn(13)]
		}
		if rng.Intn(2) == 0 {
			b = strconv.AppendInt(b[:0], rng.Int63()>>rng.Intn(63)*int64(1-2*rng.Intn(2)), 10)
		}
		v, ok := engine.ParseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		canonical := err == nil && strconv.FormatInt(want, 10) == string(b)
		if ok != canonical || (ok && v != want) {
			t.Fatalf("ParseInt(%q) = %d, %v; strconv: %d, canonical %v", b, v, ok, want, canonical)
		}
	}
}

// TestParseMemory: Redis's memtoull, as redis-server 7 answers CONFIG SET
// of a memory parameter.
func TestParseMemory(t *testing.T) {
	for _, tc := range []struct {
		s  string
		v  uint64
		ok bool
	}{
		{"5", 5, true}, {"5b", 5, true}, {"512k", 512000, true}, {"512kb", 512 << 10, true},
		{"100m", 100e6, true}, {"100mb", 100 << 20, true}, {"1g", 1e9, true}, {"1gb", 1 << 30, true},
		{"1GB", 1 << 30, true}, {"1Gb", 1 << 30, true}, {"1gB", 1 << 30, true}, {"007kb", 7 << 10, true},
		{"", 0, true}, {"kb", 0, true}, // no digits: 0
		{"-0", 0, false}, {"-1kb", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"1.5mb", 0, false}, {"1tb", 0, false}, {"1kbb", 0, false}, {"0x10", 0, false},
		{"17179869184gb", 0, true},                        // 2^34 GiB: the multiplication wraps, as in C
		{"99999999999999999999999", math.MaxUint64, true}, // strtoull saturates
		{"1\u212ab", 1024, true},                          // NB in ParseMemory: the Kelvin sign lowers to 'k'
		{"9223372036854775808", 1 << 63, true},            // past int64: the caller's bound
	} {
		if v, ok := engine.ParseMemory([]byte(tc.s)); v != tc.v || ok != tc.ok {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d, %v", tc.s, v, ok, tc.v, tc.ok)
		}
	}
}

func TestEqFoldAndLower(t *testing.T) {
	for _, tc := range []struct {
		arg, kw string
		ok      bool
	}{
		{"streams", "STREAMS", true}, {"StReAmS", "STREAMS", true}, {"STREAMS", "streams", true},
		{"STREAM", "STREAMS", false}, {"STREAMSS", "STREAMS", false}, {"", "", true},
		{"\u017fTREAMS", "STREAMS", false},   // only ASCII letters fold
		{"@", "`", false}, {"[", "{", false}, // the bytes beside the letters do not
	} {
		if got := engine.EqFold([]byte(tc.arg), tc.kw); got != tc.ok {
			t.Errorf("EqFold(%q, %q) = %v", tc.arg, tc.kw, got)
		}
	}
	long := strings.Repeat("XReadGroup", 5) // past LowerName's buffer
	for in, want := range map[string]string{"XAdd": "xadd", "xadd": "xadd", "CONFIG|SET": "config|set",
		"\u00c9A@[": "\u00c9a@[", long: strings.ToLower(long), "": ""} {
		if got := engine.Lower([]byte(in)); got != want {
			t.Errorf("Lower(%q) = %q, want %q", in, got, want)
		}
	}
}
