package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestOperationsBackupRunsAsWritten runs the commands of the "Backup and
// restore" section of deploy/OPERATIONS.md, as written but for the ports
// (free ones instead of 7001 and 7101/17101), against the README's
// three-node cluster of six shards holding the README's stream: the
// backup, a new single node, the restore with --verify and the XRANGE that
// reads the stream back from it.
func TestOperationsBackupRunsAsWritten(t *testing.T) {
	page, err := os.ReadFile("../../deploy/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := bytes.Cut(page, []byte("## 12. Backup and restore\n"))
	_, block, ok2 := bytes.Cut(sec, []byte("```\n"))
	block, _, ok3 := bytes.Cut(block, []byte("```\n"))
	if !ok || !ok2 || !ok3 {
		t.Fatal("deploy/OPERATIONS.md has no code block under \"## 12. Backup and restore\"")
	}
	src := startCluster(t, 3, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cc := clusterClient(t, addrsOf(src)...)
	for _, who := range []string{"alice", "bob"} {
		if err := cc.Do(ctx, "XADD", "orders", "*", "customer", who).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ports := map[string]string{"7001": strconv.Itoa(src[0].Port)}
	for _, p := range []string{"7101", "17101"} {
		ports[p] = strconv.Itoa(testkit.FreePort(t))
	}
	portRE := regexp.MustCompile(`\b(7001|7101|17101)\b`)
	var script []string
	for _, line := range strings.Split(string(block), "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			script = append(script, portRE.ReplaceAllStringFunc(cmd, func(p string) string { return ports[p] }))
		}
	}
	if len(script) < 4 {
		t.Fatalf("the section's block has %d commands: %q", len(script), block)
	}
	bin := t.TempDir()
	if err := os.Symlink(testkit.Server(t), filepath.Join(bin, "raftstream")); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	full := "set -e\n" + strings.Join(script, "\n") + "\nkill %1\nwait\n"
	cmd := exec.CommandContext(ctx, "bash", "-c", full)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The shell and the node it starts are one process group: end it
	// whatever happens.
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err = cmd.Wait()
	t.Logf("commands:\n%s\nstdout:\n%s", strings.Join(script, "\n"), out.String())
	if err != nil {
		t.Fatalf("the section's commands failed: %v\nstderr:\n%s", err, errb.String())
	}
	for _, want := range []string{"backup: 6 shards,", "restore: 6 shards, 1 streams (1 written, 0 already there), 2 entries",
		"0 differences", "customer\nalice\n", "customer\nbob\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
