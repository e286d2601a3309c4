package testkit

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/raftstream/raftstream/jepsen/local"
)

// server is the raftstream binary of this test binary: built once, on the
// first call to Server, into a directory Main removes.
var server struct {
	main bool // Main is running the tests
	race bool // build with -race
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Main runs a package's tests and exits with their status; call it from
// TestMain. race says whether Server builds the server with -race: pass
// Race to follow the test binary (a data race in the server then shows in
// its log, and Node fails the test for it), false to keep the server's
// timing free of the race detector's cost. The server built for the tests
// is removed after them.
func Main(m *testing.M, race bool) {
	server.main, server.race = true, race
	code := m.Run()
	if server.dir != "" {
		os.RemoveAll(server.dir)
	}
	os.Exit(code)
}

// Server returns the path of cmd/raftstream built for this test binary; the
// first call builds it (local.BuildServer). The package's TestMain must
// call Main.
func Server(t testing.TB) string {
	t.Helper()
	if !server.main {
		t.Fatal("testkit.Server: the package's TestMain must call testkit.Main")
	}
	server.once.Do(func() {
		if server.dir, server.err = os.MkdirTemp("", "raftstream-bin-"); server.err != nil {
			return
		}
		server.bin = filepath.Join(server.dir, "raftstream")
		server.err = local.BuildServer(server.bin, server.race)
	})
	if server.err != nil {
		t.Fatalf("build raftstream: %v", server.err)
	}
	return server.bin
}
