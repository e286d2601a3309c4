// Package resptest starts real redis-server processes for differential tests
// and speaks raw RESP to any server, so replies can be compared byte for byte.
package resptest

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It
// is taken below the kernel's ephemeral range (ip_local_port_range), where
// outgoing connections never get their local port: a port from the range
// could be given to one, such as a cluster's own dial to a peer, between
// this call and the server binding it (seen as "address already in use"
// for the fifth node of a systest cluster). Where the range cannot be read
// or leaves no room below it, the kernel picks the port.
func FreePort(t testing.TB) int {
	t.Helper()
	if lo := ephemeralLow(); lo > minPort+1000 {
		for range 100 {
			p := minPort + rand.IntN(lo-minPort)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				l.Close()
				return p
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// minPort is the lowest port FreePort hands out (clear of well-known ones).
const minPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range, 0 if it
// cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(string(f[0]))
	if err != nil {
		return 0
	}
	return lo
}

// StartRedis starts redis-server on a free loopback port with extra config
// arguments (e.g. "--appendonly", "yes") and returns its address. The server
// and its directory are removed when the test ends. If redis-server is not
// installed the test fails (CI installs it; see .ci/run).
func StartRedis(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (apt-get install redis-server): %v", err)
	}
	dir := t.TempDir()
	for attempt := 0; attempt < 5; attempt++ {
		port := FreePort(t)
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
			"--logfile", filepath.Join(dir, "redis.log")}
		args = append(args, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if waitPing(addr, 5*time.Second) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_, _ = cmd.Process.Wait()
			})
			return addr
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	t.Fatalf("redis-server did not start:\n%s", log)
	return ""
}

func waitPing(addr string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c, err := Dial(addr)
		if err == nil {
			r, err := c.Do("PING")
			c.Close()
			if err == nil && (string(r) == "+PONG\r\n" || bytes.HasPrefix(r, []byte("-NOAUTH"))) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Conn is a raw RESP connection: it sends commands as arrays of bulk strings
// and returns each reply's exact bytes.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// Dial connects to addr.
func Dial(addr string) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, r: bufio.NewReader(c)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one command and returns the raw bytes of its reply.
func (c *Conn) Do(args ...string) ([]byte, error) {
	if err := c.Send(args...); err != nil {
		return nil, err
	}
	return c.ReadReply()
}

// Send writes one command without reading a reply (for pipelining).
func (c *Conn) Send(args ...string) error {
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	_, err := c.c.Write(EncodeCommand(args...))
	return err
}

// WriteRaw writes bytes as they are (malformed input tests).
func (c *Conn) WriteRaw(p []byte) error {
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	_, err := c.c.Write(p)
	return err
}

// SetDeadline sets the connection's read/write deadline.
func (c *Conn) SetDeadline(t time.Time) { _ = c.c.SetDeadline(t) }

// EncodeCommand encodes args as a RESP array of bulk strings.
func EncodeCommand(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// ReadReply reads one complete RESP2/RESP3 reply and returns its raw bytes.
func (c *Conn) ReadReply() ([]byte, error) {
	var out bytes.Buffer
	if err := readValue(c.r, &out); err != nil {
		return out.Bytes(), err
	}
	return out.Bytes(), nil
}

func readLine(r *bufio.Reader, out *bytes.Buffer) ([]byte, error) {
	line, err := r.ReadBytes('\n')
	out.Write(line)
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("bad line %q", line)
	}
	return line[:len(line)-2], nil
}

func readValue(r *bufio.Reader, out *bytes.Buffer) error {
	line, err := readLine(r, out)
	if err != nil {
		return err
	}
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '!', '=':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readValue(r, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown RESP type %q", line)
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
