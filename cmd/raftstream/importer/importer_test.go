package importer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/engine"
)

// Unit tests of the decisions the import makes from two states; the
// process tests in cmd/raftstream (import_test.go) run it against real
// servers.

func id(ms, seq uint64) engine.ID { return engine.ID{Ms: ms, Seq: seq} }

func testJob() *streamJob {
	return &streamJob{im: &importer{cfg: DefaultConfig()}, key: "k"}
}

// argvs lists the commands as strings, for comparison.
func argvs(cmds []groupCmd) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(c.argv), "["), "]")
	}
	return out
}

func TestGroupDiff(t *testing.T) {
	src := groupInfo{name: "g", lastID: id(9, 0), entriesRead: 7, pelCount: 2,
		pending:   []nackInfo{{id(1, 0), "alice", 1000, 1}, {id(3, 1), "bob", 2000, 4}},
		consumers: []consumerInfo{{"alice", 1}, {"bob", 1}, {"idle", 0}}}
	cases := []struct {
		name string
		dst  *groupInfo
		gone map[engine.ID]bool
		want []string
		err  string
	}{
		{name: "equal groups: no command", dst: &src},
		{name: "missing group", dst: nil, want: []string{
			"XGROUP CREATE k g 9-0 MKSTREAM ENTRIESREAD 7",
			"XGROUP CREATECONSUMER k g alice",
			"XGROUP CREATECONSUMER k g bob",
			"XGROUP CREATECONSUMER k g idle",
			"XCLAIM k g alice 0 1-0 TIME 1000 RETRYCOUNT 1 FORCE JUSTID",
			"XCLAIM k g bob 0 3-1 TIME 2000 RETRYCOUNT 4 FORCE JUSTID",
		}},
		{name: "differences", dst: &groupInfo{name: "g", lastID: id(8, 0), entriesRead: 7,
			pending:   []nackInfo{{id(1, 0), "alice", 1000, 1}, {id(2, 0), "alice", 1500, 1}, {id(3, 1), "bob", 2000, 3}},
			consumers: []consumerInfo{{"alice", 2}, {"bob", 1}, {"carol", 0}}},
			want: []string{
				"XGROUP SETID k g 9-0 ENTRIESREAD 7",
				"XGROUP CREATECONSUMER k g idle",
				"XACK k g 2-0",
				"XCLAIM k g bob 0 3-1 TIME 2000 RETRYCOUNT 4 FORCE JUSTID",
				"XGROUP DELCONSUMER k g carol",
			}},
		{name: "a hole whose placeholder is gone", dst: nil, gone: map[engine.ID]bool{id(3, 1): true},
			err: "pending entry 3-1 of group g: its entry was deleted on the source and is no longer on the target"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmds, err := testJob().groupDiff(&src, c.dst, c.gone)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, new(permanentError)) {
					t.Fatalf("err %v, want a permanent error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := argvs(cmds); !reflect.DeepEqual(got, c.want) && len(got)+len(c.want) > 0 {
				t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestGroupDiffUnknownEntriesRead: a null entries-read is set as -1, which
// XGROUP CREATE/SETID take as "unknown".
func TestGroupDiffUnknownEntriesRead(t *testing.T) {
	src := groupInfo{name: "g", lastID: id(5, 0), entriesRead: -1}
	cmds, err := testJob().groupDiff(&src, &groupInfo{name: "g", lastID: id(5, 0), entriesRead: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := argvs(cmds); !reflect.DeepEqual(got, []string{"XGROUP SETID k g 5-0 ENTRIESREAD -1"}) {
		t.Errorf("commands %q", got)
	}
}

// fullReply is an XINFO STREAM FULL reply as a Redis 7.0 server sends it
// over RESP2 (with seen as the consumer's seen-time and extra appended to
// the consumer, the group and the stream).
func fullReply(seen int64, lag any, extra ...any) []any {
	consumer := append([]any{"name", "alice", "seen-time", seen, "pel-count", int64(1),
		"pending", []any{[]any{"1-0", int64(1000), int64(2)}}}, extra...)
	group := append([]any{"name", "g", "last-delivered-id", "1-0", "entries-read", int64(1), "lag", lag,
		"pel-count", int64(1), "pending", []any{[]any{"1-0", "alice", int64(1000), int64(2)}},
		"consumers", []any{consumer}}, extra...)
	return append([]any{"length", int64(1), "radix-tree-keys", int64(1), "radix-tree-nodes", int64(2),
		"last-generated-id", "1-0", "max-deleted-entry-id", "0-0", "entries-added", int64(1),
		"recorded-first-entry-id", "1-0",
		"entries", []any{[]any{"1-0", []any{"f", "v"}}},
		"groups", []any{group}}, extra...)
}

func TestParseStreamInfo(t *testing.T) {
	s, err := parseStreamInfo(fullReply(5, int64(0)))
	if err != nil {
		t.Fatal(err)
	}
	want := streamInfo{exists: true, length: 1, lastGen: id(1, 0), entriesAdded: 1, first: id(1, 0),
		groups: []groupInfo{{name: "g", lastID: id(1, 0), entriesRead: 1, pelCount: 1,
			pending: []nackInfo{{id(1, 0), "alice", 1000, 2}}, consumers: []consumerInfo{{"alice", 1}}}}}
	s.full = fields{}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	if _, err := parseStreamInfo([]any{"length"}); err == nil {
		t.Error("an odd-length map parsed")
	}
}

// TestVerifyCompare: seen-time and the radix tree are not compared, fields
// one side lacks are noted, and any other difference is reported with
// its path.
func TestVerifyCompare(t *testing.T) {
	compare := func(a, b []any) *verifyReport {
		r := &verifyReport{skipped: map[string]int{}, oneSided: map[string]int{}}
		fa, _ := asFields(a)
		fb, _ := asFields(b)
		r.compareFields("k", "", fa, fb)
		return r
	}
	r := compare(fullReply(5, int64(0)), fullReply(99, int64(0), "active-time", int64(99)))
	if len(r.diffs) != 0 {
		t.Errorf("differences %q", r.diffs)
	}
	if r.skipped["seen-time"] != 1 || r.skipped["radix-tree-nodes"] != 1 || r.oneSided["target active-time"] != 0 || r.skipped["active-time"] != 3 {
		t.Errorf("skipped %v, one-sided %v", r.skipped, r.oneSided)
	}
	r = compare(fullReply(5, int64(0)), fullReply(5, nil, "nacked-count", int64(0)))
	want := []string{"k groups[g].lag: source 0, target (nil)"}
	if !reflect.DeepEqual(r.diffs, want) {
		t.Errorf("differences %q, want %q", r.diffs, want)
	}
	if r.oneSided["target nacked-count"] != 3 {
		t.Errorf("one-sided %v", r.oneSided)
	}
}
