package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
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
	pool, err := LoadCertPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	return &BusTLS{cert: cert, ca: pool}, nil
}

// LoadCertPool reads PEM CA certificates: the cluster CA here, and the CA
// that RESP clients' certificates are verified against (package resp).
func LoadCertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading CA certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s", file)
	}
	return pool, nil
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
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: t.ca, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return &CertError{Err: err}
		}
		return nil
	}
}

// CertError is a cluster bus TLS handshake that failed on a certificate:
// the peer's is not signed by this node's cluster CA, or the peer refused
// this node's. Unlike a refused or timed-out connection it does not heal by
// retrying: the node's --tls-cert-file or --tls-ca-cert-file is wrong.
type CertError struct{ Err error }

func (e *CertError) Error() string {
	return "cluster TLS: certificate not accepted (is this node's certificate signed by the cluster CA, and is --tls-ca-cert-file the cluster CA?): " + e.Err.Error()
}

func (e *CertError) Unwrap() error { return e.Err }

// asCertError returns err as a *CertError if IsCertError(err) (a refusal
// by the peer gets the same hint as one by this node), else err.
func asCertError(err error) error {
	var ce *CertError
	if errors.As(err, &ce) || !IsCertError(err) {
		return err
	}
	return &CertError{Err: err}
}

// IsCertError reports whether err is a certificate failure on the bus:
// this node refused the peer's certificate (CertError), or the peer
// refused this node's (a TLS alert about the certificate; under TLS 1.3 the
// client learns of it on its first read after the handshake).
func IsCertError(err error) bool {
	var ce *CertError
	if errors.As(err, &ce) {
		return true
	}
	// A received alert surfaces as net.OpError{Op: "remote error"} around
	// crypto/tls's unexported alert type: "tls: bad certificate", "tls:
	// unknown certificate authority", "tls: certificate required", ...
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "remote error" && oe.Err != nil {
		m := oe.Err.Error()
		return strings.Contains(m, "certificate") || strings.Contains(m, "access denied")
	}
	return false
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
	return &clientConn{Conn: tc}, nil
}

// alertWait bounds the read that looks for the server's alert after a
// failed write; the alert, if any, was sent before the server closed, so
// it is already waiting in the socket.
const alertWait = time.Second

// clientConn is the client side of a bus TLS connection. Under TLS 1.3 the
// client's handshake completes before the server has checked the client's
// certificate: a server that refuses it sends an alert and closes, and the
// client learns of that only on its next read. A write in between fails
// with a plain EPIPE or ECONNRESET ("broken pipe") that does not say why.
// So a failed write reads once to surface the server's alert, and both
// directions report a refusal of the certificate as a *CertError.
type clientConn struct {
	*tls.Conn
}

func (c *clientConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		if aerr := c.peerAlert(); aerr != nil {
			return n, aerr
		}
	}
	return n, err
}

func (c *clientConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		err = asCertError(err)
	}
	return n, err
}

// peerAlert reads once, briefly, after a failed write and returns the
// certificate error the peer's alert names, or nil. The connection is
// unusable after a failed write, so the byte it may consume is not missed.
func (c *clientConn) peerAlert() error {
	_ = c.Conn.SetReadDeadline(time.Now().Add(alertWait))
	var b [1]byte
	if _, err := c.Conn.Read(b[:]); err != nil && IsCertError(err) {
		return asCertError(err)
	}
	return nil
}
