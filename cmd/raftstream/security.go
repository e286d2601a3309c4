package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/resp"
)

// securityOptions are the client-facing security and resource flags.
type securityOptions struct {
	protectedMode bool
	maxClients    int
	timeout       time.Duration
	outputTimeout time.Duration
	maxMemory     int64

	tlsPort     int
	tlsCert     string
	tlsKey      string
	tlsCA       string
	tlsAuthClts string
	tlsCluster  bool
	aclFile     string
	gossipKey   string
}

func registerSecurityFlags(fs *flag.FlagSet, o *securityOptions) {
	fs.BoolVar(&o.protectedMode, "protected-mode", true, "refuse to start on a non-loopback --bind without --requirepass (Redis's protected-mode)")
	fs.IntVar(&o.maxClients, "maxclients", 10000, "maximum open client connections; more are told 'max number of clients reached'")
	fs.DurationVar(&o.timeout, "timeout", 0, "close client connections idle for this long (0 = never)")
	fs.DurationVar(&o.outputTimeout, "client-output-timeout", 60*time.Second, "drop a client whose pending output cannot be written for this long (0 = never)")
	fs.Int64Var(&o.maxMemory, "maxmemory", 0, "bytes of heap above which denyoom commands (XADD, ...) fail with -OOM (0 = no limit)")
	fs.IntVar(&o.tlsPort, "tls-port", 0, "TLS RESP port, served alongside --port (0 = none)")
	fs.StringVar(&o.tlsCert, "tls-cert-file", "", "PEM server certificate for --tls-port")
	fs.StringVar(&o.tlsKey, "tls-key-file", "", "PEM private key for --tls-port")
	fs.StringVar(&o.tlsCA, "tls-ca-cert-file", "", "PEM CA certificates that verify client certificates")
	fs.StringVar(&o.tlsAuthClts, "tls-auth-clients", "yes", "client certificates on --tls-port: yes, no or optional")
	fs.StringVar(&o.aclFile, "aclfile", "", "Redis ACL file (user <name> <rules>... per line) loaded at startup; replicated ACL SETUSER/DELUSER apply on top")
	fs.StringVar(&o.gossipKey, "gossip-key-file", "", "file holding the base64 16/24/32-byte key that encrypts and authenticates gossip (same on every node)")
	fs.BoolVar(&o.tlsCluster, "tls-cluster", false, "mutual TLS on the cluster bus with --tls-cert-file/--tls-key-file, peers verified against --tls-ca-cert-file")
}

// checkProtectedMode refuses a configuration that exposes an open server:
// a bind address that is not loopback with no password.
func checkProtectedMode(bind, requirepass string, o *securityOptions) error {
	if !o.protectedMode || requirepass != "" {
		return nil
	}
	if ip := net.ParseIP(bind); bind == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("protected mode: refusing to listen on %q without --requirepass; set a password, bind a loopback address, or pass --protected-mode=false", bind)
}

// listenClients opens the plaintext port (when port > 0) and the TLS port
// (when --tls-port is set) and returns one listener for both (the server
// applies its connection limits to what it accepts: applySecurity).
func listenClients(bind string, port int, o *securityOptions) (net.Listener, error) {
	var lns []net.Listener
	closeAll := func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}
	if port > 0 || o.tlsPort == 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(port)))
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	if o.tlsPort > 0 {
		cfg, err := resp.ServerTLSConfig(resp.TLSOptions{CertFile: o.tlsCert, KeyFile: o.tlsKey, CAFile: o.tlsCA, AuthClients: o.tlsAuthClts})
		if err != nil {
			closeAll()
			return nil, err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(o.tlsPort)))
		if err != nil {
			closeAll()
			return nil, err
		}
		lns = append(lns, resp.TLSListener(ln, cfg))
	}
	if len(lns) == 0 {
		return nil, errors.New("no client port")
	}
	if len(lns) == 1 {
		return lns[0], nil
	}
	return resp.MultiListener(lns...), nil
}

// busTLS is the cluster bus's TLS when --tls-cluster is set.
func busTLS(o *securityOptions) (*cluster.BusTLS, error) {
	if !o.tlsCluster {
		return nil, nil
	}
	return cluster.LoadBusTLS(o.tlsCert, o.tlsKey, o.tlsCA)
}

// gossipKey reads --gossip-key-file (base64 of 16, 24 or 32 bytes).
func gossipKey(o *securityOptions) ([]byte, error) {
	if o.gossipKey == "" {
		return nil, nil
	}
	b, err := os.ReadFile(o.gossipKey)
	if err != nil {
		return nil, fmt.Errorf("--gossip-key-file: %w", err)
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || (len(k) != 16 && len(k) != 24 && len(k) != 32) {
		return nil, errors.New("--gossip-key-file: want the base64 encoding of a 16, 24 or 32-byte key")
	}
	return k, nil
}

// applySecurity configures srv's server-side limits, its ACL file and ACL
// replication.
func applySecurity(srv *resp.Server, o *securityOptions) error {
	if o.aclFile != "" {
		if err := srv.LoadACLFile(o.aclFile); err != nil {
			return fmt.Errorf("--aclfile: %w", err)
		}
	}
	srv.SetLimits(resp.Limits{MaxClients: o.maxClients, IdleTimeout: o.timeout, WriteTimeout: o.outputTimeout, MaxMemory: o.maxMemory})
	srv.ReplicateACL()
	return nil
}
