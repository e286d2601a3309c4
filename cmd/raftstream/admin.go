package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/resp"
	"github.com/raftstream/raftstream/resp/admin"
	"github.com/raftstream/raftstream/resp/wire"
)

// Operator subcommands and the admin HTTP server's flags and wiring. The
// server side lives in resp (admin_cmds.go), resp/admin (the HTTP server)
// and the node and server that write their own series; the client side is
// admin_client.go. This file only parses arguments, joins the pieces and
// prints.
//
//	raftstream status          --addr host:port        table of nodes and shard replicas
//	raftstream transfer-leader --addr host:port --shard N [--to node-id]
//	raftstream snapshot        --addr host:port [--shard N]
//	raftstream remove-node     --addr host:port --node node-id
//
// Adding a node needs no subcommand: start it with --join (deploy/OPERATIONS.md).

// adminCommands maps a subcommand name to its entry point (exit status).
var adminCommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"status":          statusCmd,
	"transfer-leader": transferLeaderCmd,
	"snapshot":        snapshotCmd,
	"remove-node":     removeNodeCmd,
}

// The admin server's Scrape is where the node and the RESP server write
// their series; each declares the writer it needs.
var (
	_ cluster.MetricWriter = (*admin.Scrape)(nil)
	_ resp.MetricWriter    = (*admin.Scrape)(nil)
)

// adminOptions are the server's admin HTTP flags.
type adminOptions struct {
	addr        string
	pprof       bool
	streams     resp.StreamMetrics
	readyMaxLag uint64
}

func registerAdminFlags(fs *flag.FlagSet, o *adminOptions) {
	fs.StringVar(&o.addr, "admin-addr", "", "admin HTTP listen address for /metrics, /healthz, /readyz (e.g. 127.0.0.1:9121); empty = off")
	fs.BoolVar(&o.pprof, "pprof", false, "serve net/http/pprof under /debug/pprof/ on --admin-addr")
	fs.IntVar(&o.streams.TopStreams, "metrics-streams", 0, "export the length of the N longest streams per local shard replica (0 = off)")
	fs.IntVar(&o.streams.MaxGroups, "metrics-max-groups", 5000, "export lag, pending count and oldest-pending age of at most N consumer groups of the local shard replicas, the largest backlogs first (0 = none)")
	fs.Uint64Var(&o.readyMaxLag, "ready-max-lag", 1000, "committed-but-unapplied entries a replica may have and still be ready (/readyz)")
}

// startAdmin starts the admin HTTP server when --admin-addr is set; it
// stops when ctx ends. The node answers readiness and writes its series
// from the start; the RESP server joins once run stores it in srv (until
// then /readyz answers 503 and /metrics has no client series).
func startAdmin(ctx context.Context, o adminOptions, node *cluster.Node, srv *atomic.Pointer[resp.Server], log *slog.Logger) error {
	if o.addr == "" {
		return nil
	}
	src := admin.Sources{
		Ready: readyOnceServing(srv, func() (bool, string) { return node.Ready(o.readyMaxLag) }),
		Collect: []func(*admin.Scrape){
			func(sc *admin.Scrape) { node.CollectMetrics(sc) },
			func(sc *admin.Scrape) {
				if s := srv.Load(); s != nil {
					s.CollectMetrics(sc)
				}
			},
			func(sc *admin.Scrape) { resp.CollectStreams(node, o.streams, sc) },
		},
	}
	addr, err := admin.New(admin.Config{Pprof: o.pprof}, src).ListenAndServe(ctx, o.addr)
	if err != nil {
		return fmt.Errorf("--admin-addr: %w", err)
	}
	log.Info("admin HTTP server listening", "addr", addr.String(), "pprof", o.pprof)
	return nil
}

// readyOnceServing is /readyz's question: not ready before the RESP server
// is attached (run waits for shard leaders first), then the node's answer.
func readyOnceServing(srv *atomic.Pointer[resp.Server], node func() (bool, string)) func() (bool, string) {
	return func() (bool, string) {
		if srv.Load() == nil {
			return false, "not serving clients yet (waiting for shard leaders at startup)"
		}
		return node()
	}
}

// clientFlags are the flags every admin subcommand shares.
func clientFlags(name string, stderr io.Writer) (*flag.FlagSet, *string, *string, *time.Duration) {
	fs := flag.NewFlagSet("raftstream "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "RESP address of a node (host:port)")
	pass := fs.String("requirepass", os.Getenv("RAFTSTREAM_REQUIREPASS"), "password, if the cluster requires one")
	timeout := fs.Duration("timeout", 15*time.Second, "per-request timeout")
	return fs, addr, pass, timeout
}

func statusCmd(args []string, stdout, stderr io.Writer) int {
	fs, addr, pass, timeout := clientFlags("status", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	nodes, rows, err := clusterStatus(*addr, *pass, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "raftstream status:", err)
		return 1
	}
	if err := writeStatus(stdout, nodes, rows); err != nil {
		fmt.Fprintln(stderr, "raftstream status:", err)
		return 1
	}
	return 0
}

func transferLeaderCmd(args []string, stdout, stderr io.Writer) int {
	fs, addr, pass, timeout := clientFlags("transfer-leader", stderr)
	shard := fs.Int("shard", -1, "shard number (required); the command is sent to its current leader")
	to := fs.String("to", "", "node ID to hand leadership to (default: the most up-to-date other replica)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *shard < 0 {
		fmt.Fprintln(stderr, "raftstream transfer-leader: --shard is required")
		return 2
	}
	cmd := []string{"RAFTSTREAM", "TRANSFER-LEADER", fmt.Sprint(*shard)}
	if *to != "" {
		cmd = append(cmd, *to)
	}
	// The command must reach the shard's leader: find it from any node. If
	// leadership moves between the lookup and the command (TRYAGAIN), look
	// it up again, a bounded number of times.
	deadline := time.Now().Add(*timeout)
	for attempt := 1; ; attempt++ {
		_, rows, err := clusterStatus(*addr, *pass, *timeout)
		if err != nil {
			fmt.Fprintln(stderr, "raftstream transfer-leader:", err)
			return 1
		}
		leader := shardLeaderAddr(rows, *shard)
		if leader != "" {
			err = adminOnce(leader, *pass, *timeout, cmd)
			if err == nil {
				fmt.Fprintln(stdout, "OK")
				return 0
			}
			var ae wire.Error
			if !errors.As(err, &ae) || !strings.HasPrefix(string(ae), "TRYAGAIN") {
				fmt.Fprintln(stderr, "raftstream transfer-leader:", err)
				return 1
			}
		}
		if attempt >= 10 || time.Now().After(deadline) {
			fmt.Fprintf(stderr, "raftstream transfer-leader: shard %d has no stable leader after %d attempts\n", *shard, attempt)
			return 1
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// adminOnce sends one admin command whose reply is a status.
func adminOnce(addr, pass string, timeout time.Duration, cmd []string) error {
	c, err := adminDial(addr, pass, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = adminDo(c, cmd...)
	return err
}

func snapshotCmd(args []string, stdout, stderr io.Writer) int {
	fs, addr, pass, timeout := clientFlags("snapshot", stderr)
	shard := fs.Int("shard", -1, "shard number (default: every shard replica on the node)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmd := []string{"RAFTSTREAM", "SNAPSHOT"}
	if *shard >= 0 {
		cmd = append(cmd, fmt.Sprint(*shard))
	}
	return doAdmin(*addr, *pass, *timeout, cmd, stdout, stderr)
}

func removeNodeCmd(args []string, stdout, stderr io.Writer) int {
	fs, addr, pass, timeout := clientFlags("remove-node", stderr)
	id := fs.String("node", "", "ID of the member to drain and remove (40 hex, as CLUSTER NODES prints it)")
	*timeout = 6 * time.Minute
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *id == "" {
		fmt.Fprintln(stderr, "raftstream remove-node: --node is required")
		return 2
	}
	return doAdmin(*addr, *pass, *timeout, []string{"RAFTSTREAM", "REMOVE-NODE", *id}, stdout, stderr)
}

// doAdmin runs one admin command and prints its reply.
func doAdmin(addr, pass string, timeout time.Duration, cmd []string, stdout, stderr io.Writer) int {
	c, err := adminDial(addr, pass, timeout)
	if err != nil {
		fmt.Fprintln(stderr, "raftstream:", err)
		return 1
	}
	defer c.Close()
	v, err := adminDo(c, cmd...)
	if err != nil {
		fmt.Fprintf(stderr, "raftstream: %s: %v\n", strings.ToLower(strings.Join(cmd[:2], " ")), err)
		return 1
	}
	if n, ok := v.(int64); ok {
		fmt.Fprintf(stdout, "%d snapshot(s) taken\n", n)
		return 0
	}
	fmt.Fprintln(stdout, v)
	return 0
}
