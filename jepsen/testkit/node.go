package testkit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/local"
)

// Node is one raftstream process started by a test: a local.Node running
// Server's binary on 127.0.0.1, with RESP port Port (address Addr), cluster
// bus port Bus, data directory Dir, and Log, the file collecting the output
// of every process the node runs. Its command line is
//
//	--port Port --cluster-port Bus --dir Dir Args...
//
// where Args may say "{name}" for Name (and use local.Node's other
// substitutions). Ports and directory stay the same across restarts.
//
// At cleanup, also of a failed test, the process is killed by PID; the test
// fails if the log reports a data race (a server built with -race writes
// them there), and a failed test prints the log's tail.
type Node struct {
	Name      string
	Addr      string
	Port, Bus int
	Dir, Log  string
	// Args are the flags after --dir; a test may change them before the
	// node (re)starts.
	Args []string

	t      testing.TB
	p      *local.Node
	killed bool // the last process ended by Kill
}

// startTimeout bounds how long a started node may take to answer PING.
const startTimeout = 30 * time.Second

// NewNode prepares (does not start) a node named name on free ports. dir is
// its data directory, "" for a new one under t.TempDir(); its log is the
// file dir+".log" beside it, so that it stays off a disk a test fills.
func NewNode(t testing.TB, name, dir string, args ...string) *Node {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), name)
	}
	n := &Node{Name: name, Dir: dir, Log: dir + ".log", Args: args, t: t,
		p: &local.Node{Name: name, Bin: Server(t), Dir: dir, Log: dir + ".log"}}
	n.setPorts(FreePort(t), FreePort(t))
	t.Cleanup(n.cleanup)
	return n
}

func (n *Node) setPorts(port, bus int) {
	n.Port, n.Bus = port, bus
	n.Addr = "127.0.0.1:" + strconv.Itoa(port)
	n.p.Port = port
	n.p.Vars = map[string]string{"bus": strconv.Itoa(bus), "name": n.Name}
}

// BusAddr is the node's cluster bus address (what --join lists).
func (n *Node) BusAddr() string { return "127.0.0.1:" + strconv.Itoa(n.Bus) }

// StartNode starts a single node (see NewNode) and waits until it answers
// PING. A node that does not start is tried again on other ports, up to 5
// times: a port can be taken between FreePort and the node's bind.
func StartNode(t testing.TB, dir string, args ...string) *Node {
	t.Helper()
	n := NewNode(t, "n1", dir, args...)
	var err error
	for range 5 {
		if err = n.start(); err == nil {
			return n
		}
		n.setPorts(FreePort(t), FreePort(t))
	}
	t.Fatalf("raftstream did not start: %v\n%s", err, n.Tail())
	return nil
}

// NewCluster prepares n nodes, n1…nN, that form one cluster when they are
// started together (StartAll): each has --join with every node's bus
// address, --bootstrap-expect n and --host-id its name (the nodes model
// machines of their own, so a cluster formed without a shard count has one
// shard per node whatever this machine's CPUs), then args. Their data
// directories share one t.TempDir().
func NewCluster(t testing.TB, n int, args ...string) []*Node {
	t.Helper()
	root := t.TempDir()
	nodes := make([]*Node, n)
	buses := make([]string, n)
	for i := range nodes {
		name := "n" + strconv.Itoa(i+1)
		nodes[i] = NewNode(t, name, filepath.Join(root, name))
		buses[i] = nodes[i].BusAddr()
	}
	for _, nd := range nodes {
		nd.Args = append([]string{"--join", strings.Join(buses, ","), "--bootstrap-expect", strconv.Itoa(n), "--host-id", nd.Name}, args...)
	}
	return nodes
}

// StartCluster starts a cluster of n nodes (NewCluster, StartAll).
func StartCluster(t testing.TB, n int, args ...string) []*Node {
	t.Helper()
	nodes := NewCluster(t, n, args...)
	StartAll(t, nodes...)
	return nodes
}

// StartAll starts nodes together, since the nodes of a new cluster wait for
// each other before they serve, and waits until every one answers PING.
func StartAll(t testing.TB, nodes ...*Node) {
	t.Helper()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.start() })
	}
	wg.Wait()
	failed := false
	for i, err := range errs {
		if err != nil {
			t.Errorf("%v\n%s", err, nodes[i].Tail())
			failed = true
		}
	}
	if failed {
		t.FailNow()
	}
}

// Start starts the node (again, after Kill or Stop: same ports and data)
// and waits until it answers PING; the test fails if it does not.
func (n *Node) Start() {
	n.t.Helper()
	if err := n.start(); err != nil {
		n.t.Fatalf("%v\n%s", err, n.Tail())
	}
}

func (n *Node) start() error {
	n.p.Args = append([]string{"--port", "{port}", "--cluster-port", "{bus}", "--dir", "{dir}"}, n.Args...)
	n.killed = false
	return n.p.Start(startTimeout)
}

// Kill sends SIGKILL to the process (by PID) and waits until it is reaped:
// a crash, after which the data directory holds what reached the disk.
func (n *Node) Kill() {
	if err := n.p.Kill(); err != nil {
		n.t.Errorf("kill %s: %v", n.Name, err)
	}
	n.killed = true
}

// Stop sends SIGTERM and waits up to timeout for the process to exit, then
// kills it. It returns nil when the process exited with status 0 in time
// (or had been killed by Kill), else how it ended.
func (n *Node) Stop(timeout time.Duration) error {
	if err := n.p.Stop(timeout); err != nil {
		return err
	}
	if n.killed {
		return nil
	}
	if err := n.p.ExitErr(); err != nil {
		return fmt.Errorf("%s after SIGTERM: %w", n.Name, err)
	}
	return nil
}

// Restart kills the node and starts it again on the same ports and data.
func (n *Node) Restart() {
	n.t.Helper()
	n.Kill()
	n.Start()
}

// Pid is the running process's ID, 0 when none runs.
func (n *Node) Pid() int { return n.p.Pid() }

// Tail is the end of the node's log.
func (n *Node) Tail() string {
	b, _ := os.ReadFile(n.Log)
	return string(b[max(0, len(b)-4000):])
}

func (n *Node) cleanup() {
	n.Kill()
	b, _ := os.ReadFile(n.Log)
	if i := bytes.Index(b, []byte("WARNING: DATA RACE")); i >= 0 {
		n.t.Errorf("data race in raftstream %s (%s):\n%s", n.Name, n.Log, b[i:min(len(b), i+4000)])
	}
	if n.t.Failed() {
		n.t.Logf("--- %s log tail (%s):\n%s", n.Name, n.Log, n.Tail())
	}
}
