package slots

import (
	"slices"
	"testing"
)

func TestCRC16Golden(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#x, want 0x31c3", got)
	}
	if got := crc16String("123456789"); got != 0x31C3 {
		t.Fatalf("crc16String(123456789) = %#x, want 0x31c3", got)
	}
	if got := CRC16(nil); got != 0 {
		t.Fatalf("CRC16(empty) = %#x, want 0", got)
	}
}

func TestHashTags(t *testing.T) {
	cases := []struct{ key, hashed string }{
		{"foo", "foo"},
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"{", "{"},
		{"}{", "}{"},
		{"a{b", "a{b"},
		{"", ""},
	}
	for _, c := range cases {
		if got := string(Tag([]byte(c.key))); got != c.hashed {
			t.Errorf("Tag(%q) = %q, want %q", c.key, got, c.hashed)
		}
		if Of([]byte(c.key)) != OfString(c.key) {
			t.Errorf("Of/OfString disagree on %q", c.key)
		}
	}
	if Of([]byte("{user1000}.following")) != Of([]byte("{user1000}.followers")) {
		t.Fatal("{user1000} keys in different slots")
	}
	// Known slots from the Redis Cluster specification and redis-cli.
	known := map[string]int{"foo": 12182, "bar": 5061, "hello": 866, "123456789": 0x31C3 % Count}
	for k, want := range known {
		if got := OfString(k); got != want {
			t.Errorf("Of(%q) = %d, want %d", k, got, want)
		}
	}
}

func TestRanges(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 16, 17, 1000, Count} {
		rs := Ranges(n)
		if len(rs) != n || rs[0].First != 0 || rs[n-1].Last != Count-1 {
			t.Fatalf("Ranges(%d) = %v... bad ends", n, rs[:1])
		}
		minSz, maxSz := Count, 0
		for i, r := range rs {
			if i > 0 && r.First != rs[i-1].Last+1 {
				t.Fatalf("Ranges(%d): gap before %d", n, i)
			}
			sz := r.Last - r.First + 1
			minSz, maxSz = min(minSz, sz), max(maxSz, sz)
		}
		if maxSz-minSz > 1 {
			t.Fatalf("Ranges(%d): sizes %d..%d", n, minSz, maxSz)
		}
		m := NewMap(n)
		for s := 0; s < Count; s++ {
			i := m.Shard(s)
			if !rs[i].Contains(s) {
				t.Fatalf("NewMap(%d).Shard(%d) = %d, range %v", n, s, i, rs[i])
			}
		}
	}
	if got := Ranges(16)[0]; got != (Range{0, 1023}) {
		t.Fatalf("Ranges(16)[0] = %v", got)
	}
	if got := Ranges(3); got[0] != (Range{0, 5460}) || got[1] != (Range{5461, 10921}) || got[2] != (Range{10922, 16383}) {
		t.Fatalf("Ranges(3) = %v, want redis-cli's 0-5460 5461-10921 10922-16383", got)
	}
}

func TestRangesPanics(t *testing.T) {
	for _, n := range []int{0, -1, Count + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Ranges(%d) did not panic", n)
				}
			}()
			Ranges(n)
		}()
	}
}

func BenchmarkOf(b *testing.B) {
	k := []byte("orders:{12345}:stream")
	for i := 0; i < b.N; i++ {
		_ = Of(k)
	}
}

func TestMapRunsAndAssign(t *testing.T) {
	m := NewMap(3)
	if got := m.Runs(); len(got) != 3 || got[1] != (Run{5461, 10921, 1}) {
		t.Fatalf("NewMap(3).Runs() = %v", got)
	}
	m2, err := m.Assign(Range{100, 199}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Run{{0, 99, 0}, {100, 199, 2}, {200, 5460, 0}, {5461, 10921, 1}, {10922, 16383, 2}}
	if !slices.Equal(m2.Runs(), want) {
		t.Fatalf("Assign: runs %v, want %v", m2.Runs(), want)
	}
	if m.Shard(150) != 0 || m2.Shard(150) != 2 {
		t.Fatal("Assign changed the original map or missed a slot")
	}
	if got := m2.RangesOf(2); !slices.Equal(got, []Range{{100, 199}, {10922, 16383}}) {
		t.Fatalf("RangesOf(2) = %v", got)
	}
	m3, err := FromRuns(m2.Runs())
	if err != nil || !m3.Equal(m2) {
		t.Fatalf("FromRuns(Runs()) = %v, %v", m3, err)
	}
	// A shard with no slots keeps its number; Shards counts the highest.
	m4, _ := m.Assign(Range{0, 16383}, 5)
	if m4.Shards() != 6 || m4.Owners() != 1 || len(m4.RangesOf(0)) != 0 {
		t.Fatalf("Assign all to 5: shards %d owners %d", m4.Shards(), m4.Owners())
	}
	for _, bad := range [][]Run{
		{{0, 100, 0}},
		{{0, 100, 0}, {100, 16383, 1}},
		{{0, 100, 0}, {102, 16383, 1}},
		{{0, 16383, -1}},
	} {
		if _, err := FromRuns(bad); err == nil {
			t.Errorf("FromRuns(%v) accepted", bad)
		}
	}
}
