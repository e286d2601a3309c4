package local

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/resp/wire"
)

// Node is one server process on loopback that the harness starts, kills and
// restarts: raftstream, or redis-server (jepsen/testkit runs its test nodes
// and redis-servers as Nodes too). Its command
// line is Args with "{port}" and "{dir}" replaced by the node's RESP port and
// data directory, which stay the same across restarts (a restart after Kill
// is a crash recovery from whatever reached the disk).
type Node struct {
	Name string
	Bin  string
	Args []string
	Port int
	Host string // RESP host; default 127.0.0.1 (the netns driver uses the node's namespace IP)
	Dir  string
	Log  string // file collecting the process's stdout and stderr
	// Vars are further substitutions in Args: "{key}" becomes Vars[key].
	Vars map[string]string

	mu sync.Mutex
	p  *process // the last process started, or nil
}

// process is one run of a Node's command.
type process struct {
	cmd  *exec.Cmd
	exit chan struct{} // closed when cmd has been reaped
	err  error         // how it ended (cmd.Wait); read after exit is closed
}

// running are the processes started and not yet reaped, in this process.
var running = processSet{m: map[*process]struct{}{}}

type processSet struct {
	mu     sync.Mutex
	m      map[*process]struct{}
	closed bool // KillAll ran: no process starts any more
}

// errKilled is Start's error once KillAll has run.
var errKilled = errors.New("the program is killing its processes: no new ones start")

// start starts cmd and adds its process to the set, in one step under the
// set's lock, so that KillAll sees every process started before it and
// none starts after it (one started while the program ends would outlive
// it).
func (s *processSet) start(cmd *exec.Cmd) (*process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errKilled
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exit: make(chan struct{})}
	s.m[p] = struct{}{}
	return p, nil
}

func (s *processSet) remove(p *process) {
	s.mu.Lock()
	delete(s.m, p)
	s.mu.Unlock()
}

// KillAll sends SIGKILL, by PID, to every process a Node of this program
// started that has not been reaped, and waits (up to timeout) until they
// are: for a program that must end at once (cmd/jepsen's second signal)
// without leaving its servers behind. From then on Start fails, so that a
// goroutine still restarting a node cannot leave one running either.
func KillAll(timeout time.Duration) {
	running.mu.Lock()
	running.closed = true
	ps := make([]*process, 0, len(running.m))
	for p := range running.m {
		ps = append(ps, p)
	}
	running.mu.Unlock()
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	deadline := time.After(timeout)
	for _, p := range ps {
		select {
		case <-p.exit:
		case <-deadline:
			return
		}
	}
}

// ended reports whether the process has been reaped.
func (p *process) ended() bool {
	select {
	case <-p.exit:
		return true
	default:
		return false
	}
}

// Addr is the node's RESP address.
func (n *Node) Addr() string {
	h := n.Host
	if h == "" {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, strconv.Itoa(n.Port))
}

// Running reports whether the process is alive.
func (n *Node) Running() bool {
	p := n.proc()
	return p != nil && !p.ended()
}

// Pid is the process ID of the running process, 0 when none runs.
func (n *Node) Pid() int {
	if p := n.proc(); p != nil && !p.ended() {
		return p.cmd.Process.Pid
	}
	return 0
}

// ExitErr is how the last process ended: nil when it exited with status 0
// or still runs, else the error of exec.Cmd.Wait ("exit status 1",
// "signal: killed").
func (n *Node) ExitErr() error {
	if p := n.proc(); p != nil && p.ended() {
		return p.err
	}
	return nil
}

func (n *Node) proc() *process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.p
}

// Start launches the process and waits up to timeout for it to answer PING
// on its port (WaitPong).
func (n *Node) Start(timeout time.Duration) error {
	n.mu.Lock()
	if n.p != nil && !n.p.ended() {
		n.mu.Unlock()
		return fmt.Errorf("node %s: already running (pid %d)", n.Name, n.p.cmd.Process.Pid)
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		n.mu.Unlock()
		return err
	}
	args := make([]string, len(n.Args))
	for i, a := range n.Args {
		a = strings.ReplaceAll(a, "{port}", strconv.Itoa(n.Port))
		a = strings.ReplaceAll(a, "{dir}", n.Dir)
		for k, v := range n.Vars {
			a = strings.ReplaceAll(a, "{"+k+"}", v)
		}
		args[i] = a
	}
	logPath := n.Log
	if logPath == "" {
		logPath = filepath.Join(n.Dir, "node.log")
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.mu.Unlock()
		return err
	}
	cmd := exec.Command(n.Bin, args...)
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = lf, lf
	p, err := running.start(cmd)
	if err != nil {
		lf.Close()
		n.mu.Unlock()
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	go func() {
		p.err = cmd.Wait()
		running.remove(p)
		lf.Close()
		close(p.exit)
	}()
	n.p = p
	n.mu.Unlock()
	if err := WaitPong(n.Addr(), timeout, p.exit); err != nil {
		_ = n.Kill()
		return fmt.Errorf("node %s: %w (log %s)", n.Name, err, logPath)
	}
	return nil
}

// Kill sends SIGKILL to the process (by its PID) and waits until it is
// reaped. Killing a stopped node is a no-op.
func (n *Node) Kill() error { return n.signal(syscall.SIGKILL, 10*time.Second) }

// Stop sends SIGTERM and waits up to timeout, then kills.
func (n *Node) Stop(timeout time.Duration) error {
	if err := n.signal(syscall.SIGTERM, timeout); err == nil {
		return nil
	}
	return n.Kill()
}

func (n *Node) signal(sig syscall.Signal, timeout time.Duration) error {
	p := n.proc()
	if p == nil || p.ended() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exit:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("node %s: still running %v after %v", n.Name, timeout, sig)
	}
}

// Restart kills the node and starts it again on the same port and data
// directory.
func (n *Node) Restart(timeout time.Duration) error {
	if err := n.Kill(); err != nil {
		return err
	}
	return n.Start(timeout)
}

// WaitPong polls addr with PING until the server answers, the process
// exits (exit closed; may be nil), or timeout passes. A server answers with
// +PONG, or with -NOAUTH when it wants a password: either way it serves.
func WaitPong(addr string, timeout time.Duration, exit <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exit:
			return errors.New("process exited before answering PING")
		default:
		}
		if last = ping(addr); last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PONG from %s within %v: %v", addr, timeout, last)
}

func ping(addr string) error {
	c, err := wire.Dial(addr, "", 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	r, err := c.Do("PING")
	if err != nil {
		return err
	}
	if got := string(r); got != "+PONG\r\n" && !strings.HasPrefix(got, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", got)
	}
	return nil
}

// Pause stops the process with SIGSTOP (a process pause: connections stay
// open, nothing is answered); Resume continues it.
func (n *Node) Pause() error { return n.send(syscall.SIGSTOP) }

// Resume sends SIGCONT.
func (n *Node) Resume() error { return n.send(syscall.SIGCONT) }

func (n *Node) send(sig syscall.Signal) error {
	p := n.proc()
	if p == nil {
		return fmt.Errorf("node %s: not started", n.Name)
	}
	return p.cmd.Process.Signal(sig)
}
