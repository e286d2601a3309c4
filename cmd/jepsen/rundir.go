package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/raftstream/raftstream/jepsen/local"
)

// newRunDir makes the directory of one invocation of jepsen run: a new
// subdirectory of out named by the local time (2026-12-02T15-04-05, then
// -2, -3… within one second), so that every run starts its nodes on fresh
// data directories (a node directory of an earlier run holds a cluster
// formed on other ports, which the new nodes would try to rejoin) and
// earlier runs' histories and reports stay as they were. out/latest is
// pointed at it (a relative symlink, replaced atomically; left alone when
// out/latest is something else).
func newRunDir(out string, now time.Time) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	stamp := now.Format("2006-01-02T15-04-05")
	for i := 1; ; i++ {
		name := stamp
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		dir := filepath.Join(out, name)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		tmp := filepath.Join(out, ".latest-"+name)
		if os.Symlink(name, tmp) == nil {
			if os.Rename(tmp, filepath.Join(out, "latest")) != nil {
				_ = os.Remove(tmp)
			}
		}
		return dir, nil
	}
}

// buildServer builds the server (cmd/raftstream of this module, found from
// any directory inside it) into dir/raftstream, for runs started with
// neither -bin nor -addr.
func buildServer(dir string) (string, error) {
	bin, err := filepath.Abs(filepath.Join(dir, "raftstream"))
	if err != nil {
		return "", err
	}
	if err := local.BuildServer(bin, false); err != nil {
		return "", fmt.Errorf("%w (run it from inside the raftstream module, or give -bin)", err)
	}
	return bin, nil
}
