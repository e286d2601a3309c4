// Package netns is the network-namespace driver of the fault-injection
// harness (root only): every node gets its own namespace on a private Linux
// bridge, and partitions are nftables drop rules INSIDE the node namespaces,
// so faults are real packet loss rather than a userspace proxy.
//
//	bridge  <prefix>br           (root namespace, no address: nothing in the
//	                              root namespace can reach the nodes)
//	ns      <prefix>ctl  10.77.0.2     the harness's clients run here
//	ns      <prefix>n<i> 10.77.0.(10+i) node i
//
// The harness never dials a namespace address from the root namespace:
// programs that talk to the nodes are started with Command(ctl, …)
// (ip netns exec). Cleanup deletes the namespaces and the bridge by name and
// is safe to call on a half-built or already removed setup.
package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Subnet is the /24 the driver uses.
const Subnet = "10.77.0"

// Net is one set-up topology.
type Net struct {
	Prefix string // name prefix of the namespaces, bridge and veths (≤ 6 bytes)
	Nodes  int
}

// Available reports why namespaces cannot be used here (nil if they can).
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("netns driver needs root")
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("netns driver needs %s: %w", bin, err)
		}
	}
	probe := "rsjprobe"
	if err := run("ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("cannot create network namespaces: %w", err)
	}
	return run("ip", "netns", "del", probe)
}

// Ctl is the clients' namespace.
func (n *Net) Ctl() string { return n.Prefix + "ctl" }

// NS is node i's namespace (i from 1).
func (n *Net) NS(i int) string { return fmt.Sprintf("%sn%d", n.Prefix, i) }

// IP is node i's address (i from 1); 0 is the ctl namespace.
func (n *Net) IP(i int) string {
	if i == 0 {
		return Subnet + ".2"
	}
	return fmt.Sprintf("%s.%d", Subnet, 10+i)
}

// Setup builds the topology: bridge, ctl and node namespaces, veth pairs,
// addresses, loopback up, an empty nftables input chain in each node. On
// error it cleans up what it made.
func Setup(prefix string, nodes int) (*Net, error) {
	if len(prefix) == 0 || len(prefix) > 6 || nodes < 1 || nodes > 50 {
		return nil, fmt.Errorf("netns: bad prefix %q or node count %d", prefix, nodes)
	}
	n := &Net{Prefix: prefix, Nodes: nodes}
	n.Cleanup()
	br := prefix + "br"
	steps := [][]string{{"ip", "link", "add", br, "type", "bridge"}, {"ip", "link", "set", br, "up"}}
	for i := 0; i <= nodes; i++ {
		ns := n.Ctl()
		if i > 0 {
			ns = n.NS(i)
		}
		host, peer := fmt.Sprintf("%sv%d", prefix, i), fmt.Sprintf("%sp%d", prefix, i)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"ip", "link", "set", host, "master", br},
			[]string{"ip", "link", "set", host, "up"},
			[]string{"ip", "link", "set", peer, "netns", ns},
			[]string{"ip", "-n", ns, "link", "set", peer, "name", "eth0"},
			[]string{"ip", "-n", ns, "addr", "add", n.IP(i) + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"})
		if i > 0 {
			steps = append(steps,
				[]string{"ip", "netns", "exec", ns, "nft", "add", "table", "inet", "jepsen"},
				[]string{"ip", "netns", "exec", ns, "nft", "add chain inet jepsen input { type filter hook input priority 0 ; }"})
		}
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			n.Cleanup()
			return nil, err
		}
	}
	return n, nil
}

// In runs f on an OS thread switched into namespace ns, so that the
// sockets f creates (listeners, dials) live in ns; they stay there when the
// thread switches back. The thread returns to its own namespace afterwards,
// or, if that fails, ends with the goroutine (it is never reused in ns).
// Needs root. f must not start goroutines that create sockets.
func In(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- in(ns, f)
	}()
	return <-errc
}

func in(ns string, f func() error) error {
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return err
	}
	defer self.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		return err
	}
	defer target.Close()
	if err := setns(target.Fd()); err != nil {
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	ferr := f()
	if err := setns(self.Fd()); err == nil {
		runtime.UnlockOSThread() // back home: the thread may be reused
	}
	return ferr
}

func setns(fd uintptr) error { return unix.Setns(int(fd), unix.CLONE_NEWNET) }

// Env is In for node i's namespace (i from 1; 0 is the ctl namespace).
func (n *Net) Env(i int) func(func() error) error {
	ns := n.Ctl()
	if i > 0 {
		ns = n.NS(i)
	}
	return func(f func() error) error { return In(ns, f) }
}

// Command returns cmd run inside namespace ns.
func Command(ns, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Partition drops every packet between nodes of different groups (node
// numbers from 1), inside each node's namespace; nodes in no group are cut
// from everyone. The ctl namespace stays connected to every node. It
// replaces any previous partition.
func (n *Net) Partition(groups ...[]int) error {
	side := map[int]int{}
	for g, ns := range groups {
		for _, i := range ns {
			side[i] = g + 1
		}
	}
	if err := n.Heal(); err != nil {
		return err
	}
	for i := 1; i <= n.Nodes; i++ {
		for j := 1; j <= n.Nodes; j++ {
			if i == j || (side[i] != 0 && side[i] == side[j]) {
				continue
			}
			if err := run("ip", "netns", "exec", n.NS(i), "nft", "add", "rule", "inet", "jepsen", "input",
				"ip", "saddr", n.IP(j), "drop"); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cut drops, for each pair {to, from} (node numbers from 1), the packets
// node to receives from node from. It replaces any previous partition.
func (n *Net) Cut(pairs [][2]int) error {
	if err := n.Heal(); err != nil {
		return err
	}
	for _, p := range pairs {
		if err := run("ip", "netns", "exec", n.NS(p[0]), "nft", "add", "rule", "inet", "jepsen", "input",
			"ip", "saddr", n.IP(p[1]), "drop"); err != nil {
			return err
		}
	}
	return nil
}

// Heal removes every drop rule.
func (n *Net) Heal() error {
	var errs []error
	for i := 1; i <= n.Nodes; i++ {
		errs = append(errs, run("ip", "netns", "exec", n.NS(i), "nft", "flush", "chain", "inet", "jepsen", "input"))
	}
	return errors.Join(errs...)
}

// Cleanup deletes the namespaces (which deletes their veth ends and rules)
// and the bridge, by name, ignoring what does not exist.
func (n *Net) Cleanup() {
	_ = run("ip", "netns", "del", n.Ctl())
	for i := 1; i <= n.Nodes; i++ {
		_ = run("ip", "netns", "del", n.NS(i))
	}
	for i := 0; i <= n.Nodes; i++ {
		_ = run("ip", "link", "del", fmt.Sprintf("%sv%d", n.Prefix, i))
	}
	_ = run("ip", "link", "del", n.Prefix+"br")
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
