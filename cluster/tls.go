package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// BusTLS is the cluster bus's mutual TLS: every connection between nodes
// (Raft of every group, the controller, internal RPC) is TLS, and each side
// must present a certificate signed by the cluster CA. Peer certificates
// are checked against the CA only, not against host names: nodes are
// addressed by IP and move; possession of a CA-signed key is the
// credential.
type BusTLS struct {
	cert tls.Certificate
	ca   *x509.CertPool
}

// LoadBusTLS reads the node's certificate and key and the cluster CA (PEM).
func LoadBusTLS(certFile, keyFile, caFile string) (*BusTLS, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, errors.New("cluster TLS needs a certificate, a key and a CA file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster TLS: no PEM certificate in %s", caFile)
	}
	return &BusTLS{cert: cert, ca: pool}, nil
}

// SetTLS turns on mutual TLS for every later bus connection (set it right
// after Listen, before any Layer is used; plaintext connections accepted
// before are refused).
func (m *Mux) SetTLS(t *BusTLS) {
	if t != nil {
		m.tls.Store(t)
	}
}

// verify checks a peer's chain against the cluster CA.
func (t *BusTLS) verify(usage x509.ExtKeyUsage) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("cluster TLS: peer sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return err
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: t.ca, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
}

// server runs the server side of the handshake on an accepted connection
// (its read deadline already bounds it); nil when it fails.
func (t *BusTLS) server(c net.Conn) net.Conn {
	cfg := &tls.Config{Certificates: []tls.Certificate{t.cert}, ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: t.verify(x509.ExtKeyUsageClientAuth), MinVersion: tls.VersionTLS13}
	tc := tls.Server(c, cfg)
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err != nil {
		return nil
	}
	_ = c.SetWriteDeadline(time.Time{})
	return tc
}

// client runs the client side of the handshake on a dialled connection.
func (t *BusTLS) client(c net.Conn, timeout time.Duration) (net.Conn, error) {
	cfg := &tls.Config{Certificates: []tls.Certificate{t.cert}, InsecureSkipVerify: true, // chain checked below
		VerifyPeerCertificate: t.verify(x509.ExtKeyUsageServerAuth), MinVersion: tls.VersionTLS13}
	tc := tls.Client(c, cfg)
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, fmt.Errorf("cluster TLS handshake with %s: %w", c.RemoteAddr(), err)
	}
	_ = c.SetDeadline(time.Time{})
	return tc, nil
}
