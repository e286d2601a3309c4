package local

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ServerPackage is the import path of the raftstream server command.
const ServerPackage = "github.com/raftstream/raftstream/cmd/raftstream"

// BuildServer builds the raftstream server into the file dst with the go
// command; it must run inside the module (its root, or a package's test
// directory). With race the server is built with -race, which needs cgo;
// without, it is built with CGO_ENABLED=0: a static binary that runs the
// same in a network namespace, a scratch container or on the host.
func BuildServer(dst string, race bool) error {
	args := []string{"build", "-o", dst}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ServerPackage)...)
	if !race {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build raftstream: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
