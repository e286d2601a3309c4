package main

import (
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

// binary is the raftstream executable built once for the whole test run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "raftstream-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "raftstream")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build raftstream:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// node is a raftstream process started by a test.
type node struct {
	t    testing.TB
	cmd  *exec.Cmd
	Addr string
	Port int
	Bus  int
	Dir  string
	args []string
	log  string
}

// startNode starts raftstream on a free loopback port with a fresh data
// directory (or dir, when given via reuse). The process is killed by PID at
// cleanup, even when the test fails.
func startNode(t testing.TB, dir string, extra ...string) *node {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	n := &node{t: t, Dir: dir, args: extra}
	n.start()
	t.Cleanup(func() {
		n.kill()
		n.checkRaces()
	})
	return n
}

// checkRaces fails the test if the server (built with -race under go test
// -race) reported a data race in its log.
func (n *node) checkRaces() {
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(n.Dir), filepath.Base(n.Dir)+"-*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if i := strings.Index(string(b), "WARNING: DATA RACE"); i >= 0 {
			n.t.Errorf("data race in raftstream (%s):\n%s", l, b[i:min(len(b), i+4000)])
		}
	}
}

func (n *node) start() {
	n.t.Helper()
	var lastLog []byte
	for attempt := 0; attempt < 5; attempt++ {
		port := testkit.FreePort(n.t)
		bus := testkit.FreePort(n.t)
		if n.Port != 0 {
			port, bus = n.Port, n.Bus // restart on the same ports
		}
		n.log = filepath.Join(filepath.Dir(n.Dir), filepath.Base(n.Dir)+"-"+strconv.Itoa(port)+".log")
		lf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			n.t.Fatal(err)
		}
		args := append([]string{"--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(bus),
			"--dir", filepath.Join(n.Dir, "data"), "--log-level", "warn"}, n.args...)
		cmd := exec.Command(binary, args...)
		cmd.Stdout, cmd.Stderr = lf, lf
		if err := cmd.Start(); err != nil {
			lf.Close()
			n.t.Fatal(err)
		}
		lf.Close()
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if waitReady(addr, 15*time.Second, cmd) {
			n.cmd, n.Addr, n.Port, n.Bus = cmd, addr, port, bus
			return
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		lastLog, _ = os.ReadFile(n.log)
	}
	n.t.Fatalf("raftstream did not start:\n%s", lastLog)
}

// waitReady waits until the node answers PING and a write succeeds (its
// shards have a leader).
func waitReady(addr string, d time.Duration, cmd *exec.Cmd) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cmd.ProcessState != nil {
			return false
		}
		c, err := testkit.Dial(addr)
		if err == nil {
			r, err := c.Do("PING")
			c.Close()
			if err == nil && (string(r) == "+PONG\r\n" || strings.HasPrefix(string(r), "-NOAUTH")) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// kill sends SIGKILL (a crash) and waits for the process.
func (n *node) kill() {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	_, _ = n.cmd.Process.Wait()
	n.cmd = nil
}

// stop sends SIGTERM (clean shutdown) and waits for the process to exit.
func (n *node) stop() error {
	if n.cmd == nil {
		return nil
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case err := <-done:
		n.cmd = nil
		return err
	case <-time.After(20 * time.Second):
		n.kill()
		return fmt.Errorf("raftstream did not exit after SIGTERM")
	}
}

// restart starts the node again on the same port and data directory.
func (n *node) restart() {
	n.t.Helper()
	n.kill()
	n.start()
}

func dial(t testing.TB, addr string) *testkit.Conn {
	t.Helper()
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t testing.TB, c *testkit.Conn, args ...string) string {
	t.Helper()
	r, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(r)
}
