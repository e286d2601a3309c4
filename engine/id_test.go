package engine

import "testing"

func TestParseID(t *testing.T) {
	cases := []struct {
		in   string
		seq  uint64
		want ID
		err  bool
	}{
		{"0-1", 0, ID{0, 1}, false},
		{"1526919030474-55", 0, ID{1526919030474, 55}, false},
		{"5", 7, ID{5, 7}, false},
		{"-", 0, MinID, false},
		{"+", 0, MaxID, false},
		{"18446744073709551615-18446744073709551615", 0, MaxID, false},
		{"18446744073709551616", 0, ID{}, true},
		{"1-", 0, ID{}, true},
		{"-1", 0, ID{}, true},
		{"a-1", 0, ID{}, true},
		{"", 0, ID{}, true},
	}
	for _, c := range cases {
		got, err := ParseID([]byte(c.in), c.seq)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("ParseID(%q) = %v, %v; want %v, err=%v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestIDOrderAndBytes(t *testing.T) {
	ids := []ID{{0, 0}, {0, 1}, {1, 0}, {1, ^uint64(0)}, {2, 0}, MaxID}
	for i := 1; i < len(ids); i++ {
		if !ids[i-1].Less(ids[i]) {
			t.Fatalf("%v !< %v", ids[i-1], ids[i])
		}
		a, b := ids[i-1].Bytes16(), ids[i].Bytes16()
		if string(a[:]) >= string(b[:]) {
			t.Fatalf("big-endian keys out of order for %v, %v", ids[i-1], ids[i])
		}
		if IDFromBytes16(b[:]) != ids[i] {
			t.Fatalf("round trip %v", ids[i])
		}
	}
}
