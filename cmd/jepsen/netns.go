package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/raftstream/raftstream/jepsen/netns"
	"github.com/raftstream/raftstream/jepsen/report"
)

// netnsPrefix names the namespaces and bridge of the netns driver
// (rsjctl, rsjn1…, rsjbr); netnsInner is the -driver value of the child.
const (
	netnsPrefix = "rsj"
	netnsInner  = "netns-inner"
)

// runNetns is -driver netns: it builds the namespaces, re-runs this command
// inside the ctl namespace (ip netns exec rsjctl jepsen run … -driver
// netns-inner), so that no address of a namespace is ever dialed from the
// root namespace, and removes the namespaces and bridge afterwards, also
// when the child fails or a signal arrives. Where namespaces are
// unavailable it says why and exits 2.
func runNetns(args []string, nodes int, stdout, stderr io.Writer) int {
	if err := netns.Available(); err != nil {
		fmt.Fprintln(stderr, "jepsen: skipping: the netns driver is unavailable here:", err)
		return report.ExitUnknown
	}
	n, err := netns.Setup(netnsPrefix, max(nodes, 1))
	if err != nil {
		fmt.Fprintln(stderr, "jepsen: netns setup:", err)
		return report.ExitUnknown
	}
	defer n.Cleanup()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "jepsen:", err)
		return report.ExitUnknown
	}
	cmd := netns.Command(n.Ctl(), self, append(append([]string{"run"}, args...), "-driver", netnsInner)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "jepsen:", err)
		return report.ExitUnknown
	}
	go func() {
		if s, ok := <-sig; ok {
			_ = cmd.Process.Signal(s) // the child stops its nodes; Cleanup follows
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(stderr, "jepsen:", err)
		return report.ExitUnknown
	}
	return report.ExitValid
}
