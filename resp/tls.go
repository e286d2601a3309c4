package resp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/raftstream/raftstream/cluster"
)

// TLSOptions are Redis's client TLS settings (tls-cert-file,
// tls-key-file, tls-ca-cert-file, tls-auth-clients).
type TLSOptions struct {
	CertFile, KeyFile string
	// CAFile verifies client certificates (required when AuthClients is
	// "yes" or "optional").
	CAFile string
	// AuthClients is "yes" (default: clients must present a certificate
	// signed by CAFile), "optional" (verified when presented) or "no".
	AuthClients string
}

// ServerTLSConfig builds the tls.Config of a RESP TLS port.
func ServerTLSConfig(o TLSOptions) (*tls.Config, error) {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, errors.New("tls: --tls-cert-file and --tls-key-file are required")
	}
	cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: loading the certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch o.AuthClients {
	case "", "yes":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "no":
		cfg.ClientAuth = tls.NoClientCert
		return cfg, nil
	default:
		return nil, fmt.Errorf("tls: --tls-auth-clients must be yes, no or optional, not %q", o.AuthClients)
	}
	if o.CAFile == "" {
		return nil, errors.New("tls: --tls-ca-cert-file is required to authenticate clients (or --tls-auth-clients no)")
	}
	pool, err := cluster.LoadCertPool(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	cfg.ClientCAs = pool
	return cfg, nil
}

// TLSListener is tls.NewListener whose connections still expose their
// socket (syscall.Conn), so that a blocked reader whose TLS client went
// away is noticed as on a plaintext connection.
func TLSListener(ln net.Listener, cfg *tls.Config) net.Listener {
	return tlsListener{Listener: tls.NewListener(ln, cfg)}
}

type tlsListener struct{ net.Listener }

func (l tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*tls.Conn); ok {
		return tlsConn{tc}, nil
	}
	return c, nil
}

type tlsConn struct{ *tls.Conn }

func (c tlsConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.NetConn().(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// MultiListener merges listeners (a plaintext port and a TLS port) into
// one, so that one Server serves both with the same state. Accept returns
// connections from any of them; Addr is the first one's; Close closes all.
func MultiListener(lns ...net.Listener) net.Listener {
	m := &multiListener{lns: lns, conns: make(chan net.Conn), done: make(chan struct{})}
	for _, ln := range lns {
		go m.pump(ln)
	}
	return m
}

type multiListener struct {
	lns   []net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (m *multiListener) pump(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			_ = m.Close()
			return
		}
		select {
		case m.conns <- c:
		case <-m.done:
			_ = c.Close()
			return
		}
	}
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			err = errors.Join(err, ln.Close())
		}
	})
	return err
}

func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
