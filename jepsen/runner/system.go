package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"path/filepath"
	"slices"
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
	orig    int                      // the nodes that form the cluster (clients' home nodes): s.nodes[:orig]
	spare   *spare                   // the membership fault's extra node s.nodes[orig], or nil
	resh    *resharder               // the reshard fault's state (reshard.go), or nil
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
		all := count
		if slices.Contains(cfg.Faults, FaultMembership) {
			all++ // the spare: not started, but its links are proxied and in the dial maps
		}
		var bus []string
		held := ports{}
		for i := 0; i < all; i++ {
			// Held until the node starts, so that no proxy (nor
			// anything else asking for a free port) gets them first.
			port, err := held.reserve()
			if err != nil {
				held.release(-1)
				return nil, err
			}
			busPort, err := held.reserve()
			if err != nil {
				held.release(-1)
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
			n.Vars["join"] = strings.Join(bus[:count], ",")
			addrs = append(addrs, n.Addr())
		}
		if all > count {
			// it joins the running cluster instead of forming one
			s.spare = &spare{i: count, dir: dir, held: held.take(s.nodes[count])}
			s.nodes[count].Vars["n"] = "1"
		}
		if slices.Contains(cfg.Faults, FaultReshard) {
			s.resh = &resharder{extra: -1, rnd: rand.New(rand.NewSource(cfg.Seed + 7))}
		}
		held.release(-1)
		// Nodes of a new cluster wait for each other: start them together.
		errs := make([]error, count)
		var wg sync.WaitGroup
		for i, n := range s.nodes[:count] {
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
		log.Info("servers started", "addrs", addrs[:count])
	}
	s.orig = len(s.nodes)
	if s.spare != nil {
		s.orig = s.spare.i
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
	home := s.proxies[p%s.orig].Target()
	return workload.Redirecting{First: s.route[home], Route: func(addr string) workload.Conn { return s.route[addr] }}
}

// waitReady retries XLEN on every key from every node until each succeeds
// (leaders elected, nodes caught up) or ctx ends.
func (s *system) waitReady(ctx context.Context, keys []string) error {
	for p := range s.proxies {
		if p >= s.orig && !s.spareIs(spareMember) {
			continue
		}
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

// heal clears every link fault and restarts nodes that are down (after a
// membership change under way has ended).
func (s *system) heal() error {
	var errs []error
	if err := s.settle(); err != nil {
		errs = append(errs, err)
	}
	if err := s.settleReshard(); err != nil {
		errs = append(errs, err)
	}
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
	for i, n := range s.nodes {
		if n.Bin == "" || i >= s.orig && !s.spareIs(spareMember) {
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
	if s.spare != nil {
		s.spare.mu.Lock()
		s.spare.held.release(-1)
		s.spare.mu.Unlock()
	}
}

// leader returns the index of the node that serves key without a
// redirection (the leader of its shard), asking every node directly; ok is
// false when none answers within timeout.
func (s *system) leader(ctx context.Context, key string, timeout time.Duration) (int, bool) {
	for i, p := range s.proxies[:s.eligible()] { // not a joining or leaving spare
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

// ports holds listeners on ports reserved for nodes that have not started
// yet: a port found free a moment ago is free only until something else
// (a proxy listening on port 0, another run) is given it.
type ports map[int]net.Listener

// reserve returns a free port on 127.0.0.1 and keeps it bound.
func (p ports) reserve() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	p[port] = l
	return port, nil
}

// release frees port (-1: every port).
func (p ports) release(port int) {
	for k, l := range p {
		if port < 0 || k == port {
			_ = l.Close()
			delete(p, k)
		}
	}
}

// take moves the ports of node n (RESP and bus) into a set of their own.
func (p ports) take(n *local.Node) ports {
	q := ports{}
	bus, _ := strconv.Atoi(n.Vars["bus"])
	for _, k := range []int{n.Port, bus} {
		if l, ok := p[k]; ok {
			q[k] = l
			delete(p, k)
		}
	}
	return q
}

// hold binds ports again (after a node stopped), as far as they are free.
func (p ports) hold(port ...int) {
	for _, k := range port {
		if _, ok := p[k]; ok {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(k))); err == nil {
			p[k] = l
		}
	}
}
