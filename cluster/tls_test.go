package cluster

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

func newTLSMux(t *testing.T, f *testkit.TLSFiles) *Mux {
	t.Helper()
	m := newTestMux(t)
	if f != nil {
		bt, err := LoadBusTLS(f.ServerCert, f.ServerKey, f.CA)
		if err != nil {
			t.Fatal(err)
		}
		m.SetTLS(bt)
	}
	return m
}

// exchange dials group on to from from and reports whether a line made the
// round trip through an echo served by to.
func exchange(t *testing.T, from, to *Mux) bool {
	t.Helper()
	l := to.Layer(RPCGroup)
	defer l.Close()
	done := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- ""
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = io.WriteString(c, line)
		done <- line
	}()
	c, err := from.Dial(to.Addr().String(), RPCGroup, 2*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		return false
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && got == "hello\n"
}

// The bus is mutual TLS: nodes holding certificates from the cluster CA
// talk; a node with a certificate from another CA, or without TLS, gets
// nothing through in either direction (so it can neither join nor take
// part in Raft).
func TestBusMutualTLS(t *testing.T) {
	good := testkit.WriteTLSFiles(t, "cluster")
	bad := testkit.WriteTLSFiles(t, "rogue")
	a, b := newTLSMux(t, &good), newTLSMux(t, &good)
	if !exchange(t, a, b) || !exchange(t, b, a) {
		t.Fatal("two nodes of the same CA cannot talk")
	}
	rogue, plain := newTLSMux(t, &bad), newTLSMux(t, nil)
	for name, m := range map[string]*Mux{"wrong CA": rogue, "plaintext": plain} {
		if exchange(t, m, a) {
			t.Errorf("%s node reached a cluster node", name)
		}
		if exchange(t, a, m) {
			t.Errorf("cluster node accepted talking to a %s node", name)
		}
	}
	// Raft's transport on a TLS bus: an AppendEntries from the rogue node
	// never reaches the cluster node's Raft consumer.
	layer := a.Layer(ShardGroup(0))
	tr := raft.NewNetworkTransport(layer, 1, time.Second, io.Discard)
	defer tr.Close()
	rt := raft.NewNetworkTransport(rogue.Layer(ShardGroup(0)), 1, time.Second, io.Discard)
	defer rt.Close()
	var resp raft.AppendEntriesResponse
	err := rt.AppendEntries("x", raft.ServerAddress(a.Addr().String()), &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("rogue")}, Term: 99}, &resp)
	if err == nil {
		t.Error("rogue AppendEntries succeeded")
	}
	select {
	case rpc := <-tr.Consumer():
		t.Errorf("rogue RPC delivered to Raft: %T", rpc.Command)
	case <-time.After(200 * time.Millisecond):
	}
}

// Under TLS 1.3 a client's handshake completes before the server has
// checked the client's certificate; the server's refusal (an alert, then
// close) reaches the client only on a read, and a write after the close
// fails with a bare "broken pipe". A client with another CA's certificate
// that keeps writing must still get a certificate error, however the
// timing falls, so a node or admin tool can say what is wrong.
func TestBusTLSRefusedClientWriteIsCertError(t *testing.T) {
	good := testkit.WriteTLSFiles(t, "cluster")
	bad := testkit.WriteTLSFiles(t, "rogue")
	// The rogue node trusts the cluster CA, so its side of the handshake
	// succeeds; only the server refuses (the case that raced).
	mixed := testkit.TLSFiles{ServerCert: bad.ServerCert, ServerKey: bad.ServerKey, CA: good.CA}
	a, rogue := newTLSMux(t, &good), newTLSMux(t, &mixed)
	l := a.Layer(RPCGroup)
	defer l.Close()
	for round := 0; round < 3; round++ {
		c, err := rogue.Dial(a.Addr().String(), RPCGroup, 2*time.Second)
		if err != nil {
			if !IsCertError(err) {
				t.Fatalf("round %d: dial failed with %v, want a certificate error", round, err)
			}
			continue
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		// Write until the refusal shows (bounded: the server closes
		// within its handshake, well inside 200 writes 10 ms apart).
		var werr error
		for i := 0; i < 200 && werr == nil; i++ {
			_, werr = io.WriteString(c, "hello\n")
			time.Sleep(10 * time.Millisecond)
		}
		c.Close()
		if werr == nil {
			t.Fatalf("round %d: 200 writes on a refused connection succeeded", round)
		}
		if !IsCertError(werr) {
			t.Fatalf("round %d: write failed with %v, want a certificate error", round, werr)
		}
		var ce *CertError
		if !errors.As(werr, &ce) {
			t.Fatalf("round %d: %v is not a *CertError", round, werr)
		}
	}
}

// LoadCertPool takes a PEM CA file; a missing file or one without a PEM
// certificate is an error that names the problem, and LoadBusTLS prefixes
// it with "cluster TLS".
func TestLoadCertPool(t *testing.T) {
	f := testkit.WriteTLSFiles(t, "pool")
	pool, err := LoadCertPool(f.CA)
	if err != nil || pool == nil {
		t.Fatalf("LoadCertPool(CA) = %v, %v", pool, err)
	}
	ca, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("a certificate the CA signed does not verify against the pool: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "none.pem")
	if _, err := LoadCertPool(missing); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "reading CA certificates: ") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadCertPool(f.ServerKey); err == nil || err.Error() != "no PEM certificate in "+f.ServerKey {
		t.Errorf("key file as CA: %v", err)
	}
	if _, err := LoadBusTLS(f.ServerCert, f.ServerKey, f.ServerKey); err == nil || err.Error() != "cluster TLS: no PEM certificate in "+f.ServerKey {
		t.Errorf("LoadBusTLS with a key file as CA: %v", err)
	}
}
