package netns

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/local"
)

// TestPartitionInsideNamespaces builds 2 node namespaces and the ctl one,
// runs redis-server in n1, and checks with redis-cli: ctl and n2 reach it;
// after Partition({1},{2}) n2 no longer does while ctl still does; after
// Heal n2 does again. Cleanup leaves no namespace behind.
func TestPartitionInsideNamespaces(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip("network namespaces unavailable: ", err)
	}
	for _, b := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skip(b, " not installed")
		}
	}
	n, err := Setup("rsjt", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Cleanup()
		out, _ := exec.Command("ip", "netns", "list").Output()
		if strings.Contains(string(out), "rsjt") {
			t.Errorf("namespaces left behind: %s", out)
		}
	})
	srv := Command(n.NS(1), "redis-server", "--bind", n.IP(1), "--port", "6390", "--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	ping := func(ns string) bool {
		out, err := Command(ns, "timeout", "1", "redis-cli", "-h", n.IP(1), "-p", "6390", "PING").Output()
		return err == nil && strings.TrimSpace(string(out)) == "PONG"
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ping(n.Ctl()) {
		if time.Now().After(deadline) {
			t.Fatal("ctl cannot reach n1")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !ping(n.NS(2)) {
		t.Fatal("n2 cannot reach n1 before the partition")
	}
	if err := n.Partition([]int{1}, []int{2}); err != nil {
		t.Fatal(err)
	}
	if ping(n.NS(2)) {
		t.Fatal("n2 reaches n1 across the partition")
	}
	if !ping(n.Ctl()) {
		t.Fatal("the partition cut the ctl namespace off")
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	if !ping(n.NS(2)) {
		t.Fatal("n2 cannot reach n1 after the heal")
	}
}

func TestSetupRejectsBadInput(t *testing.T) {
	if _, err := Setup("", 3); err == nil {
		t.Error("empty prefix accepted")
	}
	if _, err := Setup("toolongprefix", 3); err == nil {
		t.Error("long prefix accepted")
	}
	n := &Net{Prefix: "rsj", Nodes: 3}
	if n.IP(0) != "10.77.0.2" || n.IP(3) != "10.77.0.13" || n.NS(2) != "rsjn2" || n.Ctl() != "rsjctl" {
		t.Errorf("names %s %s %s %s", n.IP(0), n.IP(3), n.NS(2), n.Ctl())
	}
}

// TestProxyInsideNamespace: a link proxy made with In/Env lives in node 2's
// namespace: it listens on that namespace's loopback (unreachable from the
// root namespace), reaches redis-server in n1 from n2's own address (so n1
// sees 10.77.0.12 as the peer, which the nftables partitions key on), and a
// partition between n1 and n2 cuts the proxied link too.
func TestProxyInsideNamespace(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip("network namespaces unavailable: ", err)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	n, err := Setup("rsjp", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Cleanup)
	srv := Command(n.NS(1), "redis-server", "--bind", n.IP(1), "--port", "6391", "--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	p, err := local.NewProxyIn(n.Env(2), "127.0.0.1:0", net.JoinHostPort(n.IP(1), "6391"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// call sends one command through the proxy, dialing from inside n2.
	call := func(cmd string) (string, error) {
		var reply string
		err := In(n.NS(2), func() error {
			c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
				return err
			}
			buf := make([]byte, 4096)
			k, err := c.Read(buf)
			reply = string(buf[:k])
			return err
		})
		return reply, err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := call("PING")
		if err == nil && r == "+PONG\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PONG through the proxy: %q %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, err := call("CLIENT LIST")
	if err != nil || !strings.Contains(r, "addr="+n.IP(2)+":") {
		t.Fatalf("n1 does not see the proxied client as n2: %q %v", r, err)
	}
	// The same port on the root namespace's loopback is someone else's (if
	// anything's): through the proxy, n1 would see the client as n2.
	if c, err := net.DialTimeout("tcp", p.Addr(), 300*time.Millisecond); err == nil {
		_ = c.SetDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte("CLIENT LIST\r\n"))
		buf := make([]byte, 4096)
		k, _ := c.Read(buf)
		c.Close()
		if strings.Contains(string(buf[:k]), "addr="+n.IP(2)+":") {
			t.Fatal("the proxy in n2 is reachable from the root namespace")
		}
	}
	if err := n.Partition([]int{1}, []int{2}); err != nil {
		t.Fatal(err)
	}
	if r, err := call("PING"); err == nil && r == "+PONG\r\n" {
		t.Fatal("the proxied link crosses the partition")
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		if r, err := call("PING"); err == nil && r == "+PONG\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxied link did not come back after the heal")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
