package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/external"
	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/netns"
	"github.com/raftstream/raftstream/jepsen/workload"
)

// system is the servers under test as the clients reach them: node i is
// behind proxies[i], and conns[i] dials that proxy. With Config.Addr there is
// one pseudo-node that cannot be killed or paused.
//
// Node-to-node links: every directed bus link ni→nj goes through its own
// proxy in net (endpoints named n1…). Nodes announce their real bus address;
// node i is started with --debug-dial-map so that when it dials nj's bus it
// dials the ni→nj proxy instead. So any partition, one-way loss or delay
// between nodes can be applied per link.
type system struct {
	nodes   []*local.Node
	proxies []*local.Proxy
	net     *local.Net
	keys    []string         // the workload's streams
	ext     *external.Docker // faults on a running docker cluster, or nil
	ns      *netns.Net       // the netns driver's namespaces, or nil
	clients []*redis.Client
	route   map[string]workload.Conn // a node's own address (as MOVED names it) → its proxied conn
}

// startNodes starts cfg.Nodes servers (or wraps cfg.Addr) and their proxies.
func startNodes(cfg Config, log *slog.Logger) (*system, error) {
	s := &system{route: map[string]workload.Conn{}, net: local.NewNet()}
	var addrs []string
	if cfg.Bin == "" {
		s.ext = cfg.Docker
		for i, a := range strings.Split(cfg.Addr, ",") {
			s.nodes = append(s.nodes, &local.Node{Name: "n" + strconv.Itoa(i+1)})
			addrs = append(addrs, strings.TrimSpace(a))
		}
	} else {
		count := max(cfg.Nodes, 1)
		dir := cfg.Dir
		if dir == "" {
			dir = cfg.Out
		}
		var bus []string
		for i := 0; i < count; i++ {
			port, err := local.FreePort()
			if err != nil {
				return nil, err
			}
			busPort, err := local.FreePort()
			if err != nil {
				return nil, err
			}
			name := "n" + strconv.Itoa(i+1)
			host, bin := "127.0.0.1", cfg.Bin
			args := append([]string(nil), cfg.Args...)
			if cfg.Netns != nil { // the node runs in its namespace, on its IP
				host, port, busPort, bin = cfg.Netns.IP(i+1), 6379, 16379, "ip"
				// the namespaces are private to the run: no password needed
				args = append([]string{"netns", "exec", cfg.Netns.NS(i + 1), cfg.Bin}, append(args, "--bind", host, "--protected-mode=false")...)
			}
			busAddr := net.JoinHostPort(host, strconv.Itoa(busPort))
			bus = append(bus, busAddr)
			if cfg.InjectBug != "" {
				args = append(args, "--debug-inject-bug", cfg.InjectBug)
			}
			s.nodes = append(s.nodes, &local.Node{Name: name, Bin: bin, Args: args, Port: port, Host: host,
				Dir: filepath.Join(dir, name), Log: filepath.Join(cfg.Out, name+".log"),
				Vars: map[string]string{"bus": strconv.Itoa(busPort), "busannounce": busAddr, "name": name,
					"n": strconv.Itoa(count), "clock": "0s", "dialmap": ""}})
		}
		// One proxy per directed bus link; node i dials them via its dial map.
		// With the netns driver the proxies of node i's links live in its
		// namespace (listening on its loopback, dialing from its address), so
		// the nftables partitions, keyed on node addresses, still apply.
		s.ns = cfg.Netns
		for i, n := range s.nodes {
			var env local.Env
			if s.ns != nil {
				env = s.ns.Env(i + 1)
			}
			var dm []string
			for j, m := range s.nodes {
				if i == j {
					continue
				}
				a, err := s.net.AddIn(env, n.Name, m.Name, bus[j])
				if err != nil {
					s.close()
					return nil, err
				}
				dm = append(dm, bus[j]+"="+a)
			}
			n.Vars["dialmap"] = strings.Join(dm, ",")
		}
		for _, n := range s.nodes {
			n.Vars["join"] = strings.Join(bus, ",")
			addrs = append(addrs, n.Addr())
		}
		// Nodes of a new cluster wait for each other: start them together.
		errs := make([]error, len(s.nodes))
		var wg sync.WaitGroup
		for i, n := range s.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = n.Start(60 * time.Second)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			s.close()
			return nil, err
		}
		log.Info("servers started", "addrs", addrs)
	}
	for _, addr := range addrs {
		p, err := local.NewProxy("127.0.0.1:0", addr)
		if err != nil {
			s.close()
			return nil, err
		}
		s.proxies = append(s.proxies, p)
		c := workload.NewClient(p.Addr(), cfg.OpTimeout)
		s.clients = append(s.clients, c)
		s.route[addr] = workload.Redis{C: c}
	}
	return s, nil
}

// target is the connection of process p: its home node, following MOVED.
func (s *system) target(p int) workload.Conn {
	home := s.proxies[p%len(s.proxies)].Target()
	return workload.Redirecting{First: s.route[home], Route: func(addr string) workload.Conn { return s.route[addr] }}
}

// waitReady retries XLEN on every key from every node until each succeeds
// (leaders elected, nodes caught up) or ctx ends.
func (s *system) waitReady(ctx context.Context, keys []string) error {
	for p := range s.proxies {
		for _, k := range keys {
			for {
				c, cancel := context.WithTimeout(ctx, time.Second)
				_, err := s.target(p).Do(c, "XLEN", k)
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return fmt.Errorf("not ready after the heal: XLEN %s via %s: %w", k, s.nodes[p].Name, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	return nil
}

// heal clears every link fault and restarts nodes that are down.
func (s *system) heal() error {
	var errs []error
	for _, p := range s.proxies {
		p.Set(local.Pass, 0)
	}
	s.net.Heal()
	if s.ns != nil {
		if err := s.ns.Heal(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.ext != nil { // each a no-op (an error we ignore) when not needed
		for i := range s.nodes {
			_ = s.ext.Unpause(i)
			if s.ext.Network != "" {
				_ = s.ext.Connect(i)
			}
			_ = s.ext.Start(i)
		}
	}
	for _, n := range s.nodes {
		if n.Bin == "" {
			continue
		}
		_ = n.Resume() // a no-op unless paused
		if !n.Running() {
			if err := n.Start(60 * time.Second); err != nil {
				errs = append(errs, fmt.Errorf("restart %s for the final phase: %w", n.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s *system) close() {
	for _, c := range s.clients {
		_ = c.Close()
	}
	for _, p := range s.proxies {
		_ = p.Close()
	}
	_ = s.net.Close()
	for _, n := range s.nodes {
		if n.Bin != "" {
			_ = n.Stop(10 * time.Second)
		}
	}
}

// leader returns the index of the node that serves key without a
// redirection (the leader of its shard), asking every node directly; ok is
// false when none answers within timeout.
func (s *system) leader(ctx context.Context, key string, timeout time.Duration) (int, bool) {
	for i, p := range s.proxies {
		if !s.nodes[i].Running() && s.nodes[i].Bin != "" {
			continue
		}
		c, cancel := context.WithTimeout(ctx, timeout)
		_, err := s.route[p.Target()].Do(c, "XLEN", key)
		cancel()
		if err == nil {
			return i, true
		}
	}
	return 0, false
}
