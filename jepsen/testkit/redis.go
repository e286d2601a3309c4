package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/local"
)

// StartRedis starts redis-server on a free loopback port with extra config
// arguments (e.g. "--appendonly", "yes") and returns its address. The server
// is killed by PID and its directory removed when the test ends. If
// redis-server is not installed the test fails (CI installs it; see
// .ci/run).
func StartRedis(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (apt-get install redis-server): %v", err)
	}
	dir := t.TempDir()
	logFile := filepath.Join(dir, "redis.log")
	args := append([]string{"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}",
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
		"--logfile", logFile}, extra...)
	var last error
	for range 5 { // a port can be taken between FreePort and the bind
		n := &local.Node{Name: "redis-server", Bin: bin, Args: args, Port: FreePort(t), Dir: dir}
		if last = n.Start(5 * time.Second); last == nil {
			t.Cleanup(func() { _ = n.Kill() })
			return n.Addr()
		}
	}
	log, _ := os.ReadFile(logFile)
	t.Fatalf("redis-server did not start: %v\n%s", last, log)
	return ""
}
