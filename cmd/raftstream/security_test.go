package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp"
)

// doUntil repeats cmd on addr until pred accepts the reply (bounded).
func doUntil(t *testing.T, addr string, pred func(string) bool, cmd ...string) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c, err := testkit.Dial(addr)
		if err != nil {
			continue
		}
		r, err := c.Do(cmd...)
		c.Close()
		if last = string(r); err == nil && pred(last) {
			return last
		}
	}
	t.Fatalf("%s %q: last reply %q", addr, cmd, last)
	return ""
}

// A user restricted to ~orders:* with +@read, created on one node, can
// neither XADD nor read other keys on any node of a 3-node cluster.
func TestACLEnforcedOnEveryClusterNode(t *testing.T) {
	addrs := addrsOf(startCluster(t, 3, 3))
	// ACL SETUSER is proposed to shard 0; a node that does not lead it
	// answers MOVED to the one that does.
	setuser := []string{"ACL", "SETUSER", "orders", "on", ">orderspw", "~orders:*", "+@read"}
	target := addrs[0]
	for range 10 {
		r := doUntil(t, target, func(r string) bool { return !strings.HasPrefix(r, "-TRYAGAIN") }, setuser...)
		if r == "+OK\r\n" {
			break
		}
		if !strings.HasPrefix(r, "-MOVED ") {
			t.Fatalf("ACL SETUSER: %q", r)
		}
		target = strings.Fields(strings.TrimSpace(r))[2]
	}
	for _, a := range addrs {
		c := dial(t, a)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if r := do(t, c, "AUTH", "orders", "orderspw"); r == "+OK\r\n" {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: AUTH never accepted: %q", a, r)
			}
		}
		if r := do(t, c, "XADD", "orders:1", "*", "f", "v"); r != "-NOPERM this user has no permissions to run the 'xadd' command\r\n" {
			t.Errorf("%s: XADD: %q", a, r)
		}
		if r := do(t, c, "XRANGE", "payments:1", "-", "+"); r != "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n" {
			t.Errorf("%s: XRANGE of another key: %q", a, r)
		}
		// Its own keys are readable (here, or on the node leading them).
		if r := do(t, c, "XLEN", "orders:1"); r != ":0\r\n" && !strings.HasPrefix(r, "-MOVED ") {
			t.Errorf("%s: XLEN orders:1: %q", a, r)
		}
		if r := do(t, c, "ACL", "WHOAMI"); r != "-NOPERM this user has no permissions to run the 'acl|whoami' command\r\n" {
			t.Errorf("%s: ACL WHOAMI: %q", a, r)
		}
	}
}

// ACL users survive a restart (they live in shard 0's Raft log), and the
// log never holds the password in clear.
func TestACLSurvivesRestart(t *testing.T) {
	n := startNode(t, "")
	c := dial(t, n.Addr)
	if r := do(t, c, "ACL", "SETUSER", "app", "on", ">apppw", "~app:*", "+@all"); r != "+OK\r\n" {
		t.Fatalf("SETUSER: %q", r)
	}
	if r := do(t, c, "ACL", "SETUSER", "gone", "on", ">x"); r != "+OK\r\n" {
		t.Fatalf("SETUSER: %q", r)
	}
	if r := do(t, c, "ACL", "DELUSER", "gone"); r != ":1\r\n" {
		t.Fatalf("DELUSER: %q", r)
	}
	raw := do(t, c, "XRANGE", resp.ACLStreamKey, "-", "+")
	if strings.Contains(raw, "apppw") {
		t.Errorf("password in clear in the log: %q", raw)
	}
	n.Restart()
	doUntil(t, n.Addr, func(r string) bool { return r == "+OK\r\n" }, "AUTH", "app", "apppw")
	c = dial(t, n.Addr)
	if r := do(t, c, "ACL", "LIST"); !strings.Contains(r, "user app on #") || strings.Contains(r, "user gone") {
		t.Errorf("ACL LIST after restart: %q", r)
	}
}

func TestProtectedModeRefusesOpenBind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, testkit.Server(t), "--bind", "0.0.0.0", "--port", "0", "--dir", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "protected mode") {
		t.Errorf("non-loopback bind without a password: err %v, output %q", err, out)
	}
}

// requirepass never appears in the server's logs, even at debug level and
// after failed and successful AUTHs and CONFIG GET.
func TestRequirepassNotLogged(t *testing.T) {
	const secret = "Sup3rS3cretValue-8c1f"
	n := startNode(t, "", "--requirepass", secret, "--log-level", "debug")
	c := dial(t, n.Addr)
	do(t, c, "AUTH", "wrong")
	do(t, c, "AUTH", secret)
	do(t, c, "XADD", "s", "*", "f", "v")
	do(t, c, "CONFIG", "GET", "requirepass")
	do(t, c, "ACL", "SETUSER", "u", "on", ">"+secret+"-user")
	if err := n.Stop(stopTimeout); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(n.Log)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatal("empty log: nothing checked")
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("requirepass found in the log:\n%s", b)
	}
}

// A node serves a TLS port next to its plaintext port; redis-cli --tls and
// go-redis connect with a client certificate.
func TestTLSPortProcess(t *testing.T) {
	f := testkit.WriteTLSFiles(t, "node")
	tlsPort := testkit.FreePort(t)
	n := startNode(t, "", "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", f.ServerCert, "--tls-key-file", f.ServerKey,
		"--tls-ca-cert-file", f.CA)
	tlsAddr := "127.0.0.1:" + strconv.Itoa(tlsPort)
	pool, err := cluster.LoadCertPool(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc := redis.NewClient(&redis.Options{Addr: tlsAddr, TLSConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}})
	defer rc.Close()
	if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"f", "v"}}).Err(); err != nil {
		t.Fatalf("XADD over TLS: %v", err)
	}
	if r := do(t, dial(t, n.Addr), "XLEN", "s"); r != ":1\r\n" {
		t.Errorf("plaintext XLEN: %q", r)
	}
	out, err := exec.CommandContext(ctx, "redis-cli", "--tls", "--cacert", f.CA, "--cert", f.ClientCert, "--key", f.ClientKey,
		"-h", "127.0.0.1", "-p", strconv.Itoa(tlsPort), "XLEN", "s").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Errorf("redis-cli --tls: %q %v", out, err)
	}
}

// A 3-node cluster whose bus is mutual TLS forms and serves writes.
func TestClusterBusTLS(t *testing.T) {
	f := testkit.WriteTLSFiles(t, "cluster")
	tlsArgs := func(f testkit.TLSFiles) []string {
		return []string{"--tls-cluster", "--tls-cert-file", f.ServerCert, "--tls-key-file", f.ServerKey, "--tls-ca-cert-file", f.CA}
	}
	addrs := addrsOf(startCluster(t, 3, 3, tlsArgs(f)...))
	c := dial(t, addrs[0])
	if r := do(t, c, "CLUSTER", "INFO"); !strings.Contains(r, "cluster_known_nodes:3") {
		t.Fatalf("CLUSTER INFO: %q", r)
	}
	for i, a := range addrs {
		if r := do(t, dial(t, a), "XADD", "k"+strconv.Itoa(i), "*", "f", "v"); !strings.HasPrefix(r, "$") && !strings.HasPrefix(r, "-MOVED") {
			t.Errorf("%s: XADD over the TLS bus: %q", a, r)
		}
	}
	// That a node with another CA's certificate gets nothing through the
	// bus (no join, no Raft RPC) is shown at the transport level:
	// cluster.TestBusMutualTLS.
}

// --aclfile: the users it defines are enforced from startup (here the
// default user gets a password); a bad file stops the node.
func TestACLFileFlag(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/users.acl"
	sum := sha256.Sum256([]byte("adminpw"))
	if err := os.WriteFile(file, []byte("user default on #"+hex.EncodeToString(sum[:])+" ~* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, "", "--aclfile", file)
	c := dial(t, n.Addr)
	if r := do(t, c, "XADD", "s", "*", "f", "v"); r != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("before AUTH: %q", r)
	}
	if r := do(t, c, "AUTH", "adminpw"); r != "+OK\r\n" {
		t.Fatalf("AUTH: %q", r)
	}
	if r := do(t, c, "XADD", "s", "*", "f", "v"); !strings.HasPrefix(r, "$") {
		t.Errorf("XADD after AUTH: %q", r)
	}
	if err := os.WriteFile(file, []byte("user x +nosuch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, testkit.Server(t), "--port", strconv.Itoa(testkit.FreePort(t)), "--cluster-port", strconv.Itoa(testkit.FreePort(t)),
		"--dir", t.TempDir(), "--aclfile", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "users.acl:1") {
		t.Errorf("bad ACL file: %v %s", err, tail(out, 1000))
	}
}
