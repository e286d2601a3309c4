package local

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Node is one server process on loopback that the harness starts, kills and
// restarts: raftstream, or redis-server in this package's tests. Its command
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

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{} // closed when cmd has been reaped
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
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exit:
		return false
	default:
		return true
	}
}

// Start launches the process and waits up to timeout for it to answer PING
// with PONG on its port.
func (n *Node) Start(timeout time.Duration) error {
	n.mu.Lock()
	if n.cmd != nil {
		select {
		case <-n.exit:
		default:
			n.mu.Unlock()
			return fmt.Errorf("node %s: already running (pid %d)", n.Name, n.cmd.Process.Pid)
		}
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
	if err := cmd.Start(); err != nil {
		lf.Close()
		n.mu.Unlock()
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	exit := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		lf.Close()
		close(exit)
	}()
	n.cmd, n.exit = cmd, exit
	n.mu.Unlock()
	if err := WaitPong(n.Addr(), timeout, exit); err != nil {
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
	n.mu.Lock()
	cmd, exit := n.cmd, n.exit
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exit:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-exit:
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

// WaitPong polls addr with PING until it answers +PONG, the process exits
// (exit closed; may be nil), or timeout passes.
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
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	buf := make([]byte, 64)
	k, err := io.ReadAtLeast(c, buf, 7)
	if err != nil {
		return err
	}
	if got := string(buf[:k]); got != "+PONG\r\n" {
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
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("node %s: not started", n.Name)
	}
	return n.cmd.Process.Signal(sig)
}
