package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/report"
)

func TestCheckFixture(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	code := check([]string{"-out", dir, filepath.Join("..", "..", "jepsen", "testdata", "redis-unsafe-failover.jsonl")}, &out, &errb)
	if code != report.ExitInvalid {
		t.Fatalf("exit %d, want %d; stderr %s", code, report.ExitInvalid, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != "3 passed, 4 failed" {
		t.Fatalf("last line %q", last)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
}

func TestCheckBadInput(t *testing.T) {
	var out, errb bytes.Buffer
	path := filepath.Join(t.TempDir(), "h.jsonl")
	_ = os.WriteFile(path, []byte(`{"index":0,"process":0,"type":"ok","f":"xadd","time":1}`+"\n"), 0o644)
	if code := check([]string{path}, &out, &errb); code != report.ExitUnknown {
		t.Fatalf("exit %d for a malformed history", code)
	}
	if code := check(nil, &out, &errb); code != report.ExitUnknown {
		t.Fatalf("exit %d without arguments", code)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-addr", "127.0.0.1:1", "-faults", "kill", "-out", t.TempDir()}, &out, &errb); code != report.ExitUnknown {
		t.Fatalf("exit %d: kill without -bin accepted", code)
	}
	if !strings.Contains(errb.String(), "needs Bin") {
		t.Fatalf("stderr %q", errb.String())
	}
}
