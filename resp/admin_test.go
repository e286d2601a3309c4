package resp

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/cluster"
)

// statusBackend overrides fakeBackend's shard status (nil entry = not hosted).
type statusBackend struct {
	*fakeBackend
	st []*cluster.ShardStatus
}

func (b *statusBackend) ShardStatus(shard int) (cluster.ShardStatus, bool) {
	if shard >= len(b.st) || b.st[shard] == nil {
		return cluster.ShardStatus{}, false
	}
	return *b.st[shard], true
}

func TestAdminReadiness(t *testing.T) {
	lead := &cluster.ShardStatus{Role: "leader", Term: 3, CommitIndex: 100, AppliedIndex: 100, Leader: "a"}
	cases := []struct {
		name  string
		st    []*cluster.ShardStatus
		ready bool
		why   string
	}{
		{"all led and caught up", []*cluster.ShardStatus{lead, {Role: "follower", CommitIndex: 50, AppliedIndex: 45, Leader: "b"}}, true, "2 local shard"},
		{"shard not hosted is ignored", []*cluster.ShardStatus{nil, lead}, true, "1 local shard"},
		{"no replicas yet", []*cluster.ShardStatus{nil, nil}, false, "no shard replicas"},
		{"no leader", []*cluster.ShardStatus{lead, {Role: "candidate", Term: 9, Leader: ""}}, false, "shard 1 has no leader (role candidate, term 9)"},
		{"follower behind", []*cluster.ShardStatus{{Role: "follower", CommitIndex: 5000, AppliedIndex: 10, Leader: "b"}, lead}, false, "shard 0 is catching up: applied 10 of 5000"},
		{"lag within bound", []*cluster.ShardStatus{{Role: "follower", CommitIndex: 1010, AppliedIndex: 10, Leader: "b"}, lead}, true, ""},
	}
	for _, c := range cases {
		be := &statusBackend{newFakeBackend(2), c.st}
		a := NewAdmin(be, nil, AdminConfig{})
		if ok, why := a.Ready(); ok || !strings.Contains(why, "not serving clients") {
			t.Errorf("%s: ready without a RESP server: %q", c.name, why)
		}
		a.SetServer(New(be, Config{}))
		ok, why := a.Ready()
		if ok != c.ready || !strings.Contains(why, c.why) {
			t.Errorf("%s: Ready() = %v %q, want %v %q", c.name, ok, why, c.ready, c.why)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		want := http.StatusOK
		if !c.ready {
			want = http.StatusServiceUnavailable
		}
		if rec.Code != want {
			t.Errorf("%s: /readyz = %d, want %d", c.name, rec.Code, want)
		}
	}
}

func TestAdminPprofFlag(t *testing.T) {
	be := newFakeBackend(1)
	for _, on := range []bool{false, true} {
		rec := httptest.NewRecorder()
		NewAdmin(be, nil, AdminConfig{Pprof: on}).ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/", nil))
		if (rec.Code == 200) != on {
			t.Errorf("pprof %v: /debug/pprof/ = %d", on, rec.Code)
		}
	}
}

// TestAdminLongestStreamsAcrossScanChunks fills a shard with more streams
// than one SCAN chunk holds and checks the top N are found, longest first.
func TestAdminLongestStreamsAcrossScanChunks(t *testing.T) {
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
	a := NewAdmin(be, nil, AdminConfig{MetricsStreams: 3})
	got := a.longestStreams(0)
	want := []streamLen{{"s7", 9}, {"s2400", 7}, {"s1700", 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("longestStreams = %v, want %v", got, want)
	}
	sc := NewScrape()
	a.Collect(sc)
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
