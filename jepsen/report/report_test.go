package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
)

// staleHistory: a partition, then a read that misses an acknowledged write.
func staleHistory(t *testing.T) history.History {
	var buf bytes.Buffer
	var now int64
	w := history.NewWriterClock(&buf, func() int64 { now += 1e6; return now })
	add := func(p history.Process, v, id string) {
		inv := w.Invoke(p, history.XAdd, "s0", &history.Value{Value: v})
		w.Complete(inv, &history.Value{Value: v, ID: id}, nil)
	}
	read := func(p history.Process, es ...history.Entry) {
		inv := w.Invoke(p, history.XRange, "s0", &history.Value{Full: true})
		w.Complete(inv, &history.Value{Full: true, Entries: es}, nil)
	}
	add(0, "a", "1-0")
	w.Nemesis(history.Start, "partition n1|n2,n3")
	add(1, "b", "2-0")
	read(2, history.Entry{ID: "1-0", Value: "a"}, history.Entry{ID: "2-0", Value: "b"})
	w.Nemesis(history.Heal, "")
	read(2, history.Entry{ID: "1-0", Value: "a"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSummaryAndExitCode(t *testing.T) {
	rs := checker.Run(staleHistory(t), checker.Options{})
	var out bytes.Buffer
	if err := Summary(&out, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	passed, failed := 0, 0
	for _, r := range rs {
		if r.Valid == checker.Ok {
			passed++
		} else {
			failed++
		}
	}
	if failed == 0 || passed+failed != len(checker.All()) {
		t.Fatalf("stale history: %d passed %d failed\n%s", passed, failed, out.String())
	}
	if last, want := lines[len(lines)-1], fmt.Sprintf("%d passed, %d failed", passed, failed); last != want {
		t.Fatalf("last line %q, want %q", last, want)
	}
	if !strings.Contains(out.String(), "lost") || !strings.Contains(out.String(), "illegal") {
		t.Fatalf("summary does not name the failing checker:\n%s", out.String())
	}
	if got := ExitCode(rs, nil); got != ExitInvalid {
		t.Fatalf("exit %d, want %d", got, ExitInvalid)
	}
	ok := []checker.Result{{Name: "a", Valid: checker.Ok}}
	unk := []checker.Result{{Name: "a", Valid: checker.Ok}, {Name: "b", Valid: checker.Unknown}}
	for _, c := range []struct {
		rs   []checker.Result
		err  error
		want int
	}{
		{ok, nil, ExitValid}, {ok, errors.New("node failed to start"), ExitUnknown}, {unk, nil, ExitUnknown},
		{nil, nil, ExitUnknown}, {append(unk, checker.Result{Valid: checker.Illegal}), errors.New("x"), ExitInvalid},
	} {
		if got := ExitCode(c.rs, c.err); got != c.want {
			t.Errorf("ExitCode(%v, %v) = %d, want %d", c.rs, c.err, got, c.want)
		}
	}
}

func TestWriteDir(t *testing.T) {
	h := staleHistory(t)
	rs := checker.Run(h, checker.Options{})
	dir := t.TempDir()
	path, err := WriteDir(dir, h, rs, Meta{Title: "stale read", Seed: 42, Notes: []string{"1 stream, 3 clients"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"<svg", "partition n1|n2,n3", // timeline with the fault window
		"throughput peak",                             // latency/throughput plot
		`class="illegal"`, "non-linearizable", "lost", // summary table and anomalies
		`{&#34;index&#34;:8,`,                                   // the events of a named op
		`href="linear-s0.html"`, `<iframe src="linear-s0.html"`, // porcupine visualization
		"seed 42",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if vis, err := os.ReadFile(filepath.Join(dir, "linear-s0.html")); err != nil || !bytes.Contains(vis, []byte("<html")) {
		t.Fatalf("porcupine visualization not written: %v", err)
	}
}

func TestWriteHTMLGoodHistory(t *testing.T) {
	var buf bytes.Buffer
	h := staleHistory(t)[:7] // up to and including the first full read
	rs := checker.Run(h, checker.Options{Liveness: []history.F{}})
	if err := WriteHTML(&buf, h, rs, Meta{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<iframe") || !strings.Contains(buf.String(), "<p>none</p>") {
		t.Fatal("a valid history's report shows anomalies or visualizations")
	}
}
