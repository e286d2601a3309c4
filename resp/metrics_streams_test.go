package resp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/resp/admin"
)

// TestLongestStreamsAcrossScanChunks fills a shard with more streams than
// one SCAN chunk holds and checks the top N are found, longest first.
func TestLongestStreamsAcrossScanChunks(t *testing.T) {
	be := newFakeBackend(1)
	now := time.Now().UnixMilli()
	e := be.engines[0]
	const streams = 2*scanChunk + 500
	for i := 0; i < streams; i++ {
		n := 1
		switch i {
		case 7:
			n = 9
		case 1700:
			n = 5
		case 2400:
			n = 7
		}
		for j := 0; j < n; j++ {
			e.Exec(now, [][]byte{[]byte("XADD"), []byte(fmt.Sprintf("s%d", i)), []byte("*"), []byte("f"), []byte("v")})
		}
	}
	e.Exec(now, [][]byte{[]byte("SET"), []byte("notastream"), []byte("x")})
	e.Exec(now, [][]byte{[]byte("XGROUP"), []byte("CREATE"), []byte("s7"), []byte("g"), []byte("0")})
	e.Exec(now, [][]byte{[]byte("XREADGROUP"), []byte("GROUP"), []byte("g"), []byte("c"), []byte("COUNT"), []byte("4"), []byte("STREAMS"), []byte("s7"), []byte(">")})
	got := longestStreams(be, 0, 3)
	want := []streamLen{{"s7", 9}, {"s2400", 7}, {"s1700", 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("longestStreams = %v, want %v", got, want)
	}
	sc := admin.NewScrape()
	CollectStreams(be, 3, sc)
	var b bytes.Buffer
	sc.WriteTo(&b)
	for _, s := range []string{
		`raftstream_stream_length{shard="0",stream="s2400"} 7`,
		`raftstream_stream_group_pending{shard="0",stream="s7",group="g"} 4`,
		`raftstream_stream_group_lag{shard="0",stream="s7",group="g"} 5`,
	} {
		if !strings.Contains(b.String(), s+"\n") {
			t.Errorf("missing %q", s)
		}
	}
}
