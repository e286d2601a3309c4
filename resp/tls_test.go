package resp

import (
	"context"
	"crypto/tls"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// startTLS serves one Server on a plaintext and a TLS port.
func startTLS(t *testing.T, o TLSOptions, cfg Config) (plain, secure string) {
	t.Helper()
	tcfg, err := ServerTLSConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(newFakeBackend(1), cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve(MultiListener(pl, TLSListener(tl, tcfg))) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return pl.Addr().String(), tl.Addr().String()
}

func clientTLS(t *testing.T, f testkit.TLSFiles, withCert bool) *tls.Config {
	t.Helper()
	pool, err := cluster.LoadCertPool(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if withCert {
		cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

func TestTLSPortWithGoRedisAndRedisCli(t *testing.T) {
	f := testkit.WriteTLSFiles(t, "resp")
	plain, secure := startTLS(t, TLSOptions{CertFile: f.ServerCert, KeyFile: f.ServerKey, CAFile: f.CA, AuthClients: "yes"}, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// go-redis with a client certificate: works, and shares state with
	// the plaintext port.
	rc := redis.NewClient(&redis.Options{Addr: secure, TLSConfig: clientTLS(t, f, true), MaxRetries: -1})
	defer rc.Close()
	if _, err := rc.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"f", "v"}}).Result(); err != nil {
		t.Fatalf("XADD over TLS: %v", err)
	}
	if got := do(t, dial(t, plain), "XLEN", "s"); got != ":1\r\n" {
		t.Errorf("XLEN on the plaintext port: %q", got)
	}

	// Without a client certificate the handshake fails (tls-auth-clients yes).
	nc := redis.NewClient(&redis.Options{Addr: secure, TLSConfig: clientTLS(t, f, false), MaxRetries: -1})
	defer nc.Close()
	if err := nc.Ping(ctx).Err(); err == nil {
		t.Error("PING without a client certificate succeeded")
	}
	// Plaintext on the TLS port gets nothing useful.
	if c, err := testkit.Dial(secure); err == nil {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if got, err := c.Do("PING"); err == nil && string(got) == "+PONG\r\n" {
			t.Error("plaintext PING answered on the TLS port")
		}
		c.Close()
	}

	// redis-cli --tls.
	help, _ := exec.Command("redis-cli", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--tls") {
		t.Skip("this redis-cli was built without TLS")
	}
	host, port, _ := net.SplitHostPort(secure)
	out, err := exec.CommandContext(ctx, "redis-cli", "--tls", "--cacert", f.CA, "--cert", f.ClientCert, "--key", f.ClientKey,
		"-h", host, "-p", port, "XLEN", "s").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Errorf("redis-cli --tls XLEN: %q %v", out, err)
	}
}

func TestTLSAuthClientsOptionalAndNo(t *testing.T) {
	f := testkit.WriteTLSFiles(t, "resp")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, mode := range []string{"optional", "no"} {
		_, secure := startTLS(t, TLSOptions{CertFile: f.ServerCert, KeyFile: f.ServerKey, CAFile: f.CA, AuthClients: mode}, Config{RequirePass: "pw"})
		c := redis.NewClient(&redis.Options{Addr: secure, TLSConfig: clientTLS(t, f, false), Password: "pw", MaxRetries: -1})
		if err := c.Ping(ctx).Err(); err != nil {
			t.Errorf("%s: PING without a client certificate: %v", mode, err)
		}
		c.Close()
	}
	// A certificate from another CA is refused in optional mode.
	other := testkit.WriteTLSFiles(t, "other")
	_, secure := startTLS(t, TLSOptions{CertFile: f.ServerCert, KeyFile: f.ServerKey, CAFile: f.CA, AuthClients: "optional"}, Config{})
	cfg := clientTLS(t, f, false)
	cert, err := tls.LoadX509KeyPair(other.ClientCert, other.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	// Force sending it (Go's client skips certificates the server's CA list
	// does not name).
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	c := redis.NewClient(&redis.Options{Addr: secure, TLSConfig: cfg, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Error("a certificate signed by an unknown CA was accepted")
	}
	if _, err := ServerTLSConfig(TLSOptions{CertFile: f.ServerCert, KeyFile: f.ServerKey, AuthClients: "yes"}); err == nil {
		t.Error("auth-clients yes without a CA file accepted")
	}
}
