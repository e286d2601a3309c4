package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// mountTmpfs mounts a tmpfs of size at a fresh directory (unmounted at
// cleanup); it skips the test when mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if syscall.Unmount(dir, 0) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	})
	return dir
}

// copyDir copies a directory tree (regular files only).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDiskFullLosesNoAcknowledgedWrite fills the node's disk (an 8 MB
// tmpfs) with XADDs: once the disk is full writes fail with an error
// instead of being acknowledged, the node reports the fault (log, INFO
// persistence; TestFsyncErrorLosesNoAcknowledgedWrite checks /readyz and
// /metrics for the same fault), and after a
// restart on a bigger disk every acknowledged entry is there.
func TestDiskFullLosesNoAcknowledgedWrite(t *testing.T) {
	small := mountTmpfs(t, "8m")
	n := startNode(t, small, "--snapshot-interval", "1h")
	c := dial(t, n.Addr)
	val := strings.Repeat("v", 16<<10)
	var acked []string
	failures := map[string]int{}
	start := time.Now()
	for i := 0; i < 2000 && time.Since(start) < 60*time.Second; i++ {
		c.SetDeadline(time.Now().Add(40 * time.Second))
		r, err := c.Do("XADD", "s", "*", "f", val)
		if err != nil {
			failures["connection: "+err.Error()]++
			if c, err = testkit.Dial(n.Addr); err != nil {
				break // the node exited: that is a clear stop too
			}
			continue
		}
		if bytes.HasPrefix(r, []byte("$")) {
			acked = append(acked, string(r[bytes.Index(r, []byte("\r\n"))+2:len(r)-2]))
			continue
		}
		failures[strings.TrimSpace(string(r))]++
		if len(failures) > 0 && failures[strings.TrimSpace(string(r))] >= 20 {
			break
		}
	}
	t.Logf("%d writes acknowledged before the disk filled; failures: %v", len(acked), failures)
	if len(failures) == 0 {
		t.Fatal("the disk never filled: nothing tested")
	}
	if len(acked) == 0 {
		t.Fatal("no write acknowledged at all")
	}
	logb, _ := os.ReadFile(n.Log)
	if !bytes.Contains(logb, []byte("no space left on device")) {
		t.Errorf("the node did not report the full disk in its log:\n%s", tail(logb, 3000))
	}
	if info := rawBulk(t, n.Addr, "INFO", "persistence"); !strings.Contains(info, "raft_log_last_write_status:err\r\n") {
		t.Errorf("INFO persistence does not report the failed write:\n%s", info)
	}
	n.Kill()

	// Restart from a copy of the data on a roomy disk.
	big := t.TempDir()
	copyDir(t, small, big)
	n2 := startNode(t, big)
	c2 := dial(t, n2.Addr)
	c2.SetDeadline(time.Now().Add(30 * time.Second))
	got, err := c2.Do("XLEN", "s")
	if err != nil {
		t.Fatal(err)
	}
	var have int
	fmt.Sscanf(string(got), ":%d", &have)
	if have < len(acked) {
		t.Errorf("after restart XLEN %d < %d acknowledged", have, len(acked))
	}
	for _, id := range []string{acked[0], acked[len(acked)/2], acked[len(acked)-1]} {
		if r, _ := c2.Do("XRANGE", "s", id, id); !bytes.Contains(r, []byte(id)) {
			t.Errorf("acknowledged entry %s lost: %q", id, r)
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// A damaged or truncated bbolt Raft log store (a shard directory made
// before the node log, or RAFTSTREAM_RAFT_LOG_STORE=bolt) stops the node at
// startup with a message naming the file, instead of serving from it or
// panicking. TestCorruptNodeLogRefusesToStart is the node log's.
func TestCorruptLogStoreRefusesToStart(t *testing.T) {
	t.Setenv(logStoreEnv, "bolt")
	for _, tc := range []struct {
		name   string
		damage func(path string) error
	}{
		{"overwritten page", func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(bytes.Repeat([]byte{0xde, 0xad}, 2048), 8192)
			return err
		}},
		{"truncated", func(p string) error { return os.Truncate(p, 100) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, "")
			if r := do(t, dial(t, n.Addr), "XADD", "s", "*", "f", "v"); !strings.HasPrefix(r, "$") {
				t.Fatalf("XADD: %q", r)
			}
			if err := n.Stop(stopTimeout); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(n.Dir, "shards", "0", "raft.db")
			if err := tc.damage(db); err != nil {
				t.Fatal(err)
			}
			out, err := restartExpectingExit(t, n)
			if err == nil || !bytes.Contains(out, []byte("corrupt Raft log store")) || !bytes.Contains(out, []byte(db)) {
				t.Errorf("exit %v, output:\n%s", err, tail(out, 2000))
			}
		})
	}
}

// TestCorruptNodeLogRefusesToStart: a damaged record in the node log with
// acknowledged records after it stops the node at startup with a message
// naming the segment file and offset; the node does not cut the log there
// (that is only done for a write a crash cut off, with nothing valid after).
func TestCorruptNodeLogRefusesToStart(t *testing.T) {
	n := startNode(t, "")
	c := dial(t, n.Addr)
	for i := 0; i < 20; i++ {
		if r := do(t, c, "XADD", "s", "*", "f", strconv.Itoa(i)); !strings.HasPrefix(r, "$") {
			t.Fatalf("XADD: %q", r)
		}
	}
	if err := n.Stop(stopTimeout); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(n.Dir, "nodelog", "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("node log segments: %v", segs)
	}
	f, err := os.OpenFile(segs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, 200); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := restartExpectingExit(t, n)
	if err == nil || !bytes.Contains(out, []byte(segs[0])) || !bytes.Contains(out, []byte("damaged at offset")) {
		t.Errorf("exit %v, output:\n%s", err, tail(out, 2000))
	}
}

// restartExpectingExit starts n's binary again on its directory and ports
// and returns its output once it exits; it fails the test if the node is
// still running after 30 s (it should refuse to start).
func restartExpectingExit(t *testing.T, n *testkit.Node) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, testkit.Server(t), "--port", strconv.Itoa(n.Port), "--cluster-port", strconv.Itoa(n.Bus),
		"--dir", n.Dir).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the node kept running on a damaged log store:\n%s", tail(out, 2000))
	}
	return out, err
}
