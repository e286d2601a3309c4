package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNewRunDir: two runs in the same second get directories of their own,
// and latest follows the newer one.
func TestNewRunDir(t *testing.T) {
	out := filepath.Join(t.TempDir(), "jepsen-out")
	now := time.Date(2026, 12, 2, 15, 4, 5, 0, time.Local)
	a, err := newRunDir(out, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newRunDir(out, now)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a) != "2026-12-02T15-04-05" || filepath.Base(b) != "2026-12-02T15-04-05-2" {
		t.Fatalf("dirs %s, %s", a, b)
	}
	if l, err := os.Readlink(filepath.Join(out, "latest")); err != nil || l != filepath.Base(b) {
		t.Fatalf("latest -> %q (%v)", l, err)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 3 {
		t.Errorf("%d entries in %s, want the two runs and latest", len(entries), out)
	}
}
