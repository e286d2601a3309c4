package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/local"
)

// servers lists the PIDs of the live processes whose command is bin and,
// unless parent is 0, whose parent is parent.
func servers(t *testing.T, bin string, parent int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || !alive(p) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || parent != 0 && f[1] != strconv.Itoa(parent) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestSecondSignalKillsTheServers: jepsen run, its 3 servers up, gets
// SIGTERM (it starts healing and checking), then SIGTERM again: it exits
// at once with 128+15, and no server it started is left running, not even
// one the healing restarts after the kill.
func TestSecondSignalKillsTheServers(t *testing.T) {
	dir := t.TempDir()
	jep, rs := filepath.Join(dir, "jepsen"), filepath.Join(dir, "raftstream")
	if out, err := exec.Command("go", "build", "-o", jep, ".").CombinedOutput(); err != nil {
		t.Fatalf("build jepsen: %v\n%s", err, out)
	}
	if err := local.BuildServer(rs, false); err != nil {
		t.Fatalf("build raftstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, jep, "run", "-bin", rs, "-nodes", "3", "-faults", "pause", "-duration", "60s", "-out", filepath.Join(dir, "out"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // whatever happened, no server of this test's binary outlives it
		for _, p := range servers(t, rs, 0) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	for deadline, started := time.Now().Add(90*time.Second), []int(nil); len(started) < 3; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("servers started: %v", started)
		}
		started = servers(t, rs, cmd.Process.Pid)
	}
	time.Sleep(time.Second) // into the run
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for first := false; !first; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("jepsen ended after the first signal")
			}
			first = strings.Contains(l, "signal again to stop at once")
		case <-ctx.Done():
			t.Fatal("no word of the first signal")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("jepsen ended with %v, want exit status %d", err, 128+int(syscall.SIGTERM))
	}
	// None of them, nor one the healing restarted while jepsen ended (an
	// orphan now, so looked for by its binary alone), runs; a server
	// started at the last moment would show within a second.
	time.Sleep(time.Second)
	if left := servers(t, rs, 0); len(left) > 0 {
		t.Errorf("servers %v still running after jepsen's second signal", left)
	}
}
