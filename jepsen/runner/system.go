package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/workload"
)

// system is the servers under test as the clients reach them: node i is
// behind proxies[i], and conns[i] dials that proxy. With Config.Addr there is
// one pseudo-node that cannot be killed or paused.
type system struct {
	nodes   []*local.Node
	proxies []*local.Proxy
	bus     []*local.Proxy // node i's inbound cluster-bus link, when started with Bin
	clients []*redis.Client
	route   map[string]workload.Conn // a node's own address (as MOVED names it) → its proxied conn
}

// startNodes starts cfg.Nodes servers (or wraps cfg.Addr) and their proxies.
func startNodes(cfg Config, log *slog.Logger) (*system, error) {
	s := &system{route: map[string]workload.Conn{}}
	var addrs []string
	if cfg.Bin == "" {
		s.nodes = []*local.Node{{Name: "n1"}}
		addrs = []string{cfg.Addr}
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
			// Peers reach the node's bus through a proxy, so the bus faults
			// can cut or slow everything the node receives from its peers.
			bp, err := local.NewProxy("127.0.0.1:0", "127.0.0.1:"+strconv.Itoa(busPort))
			if err != nil {
				s.close()
				return nil, err
			}
			s.bus = append(s.bus, bp)
			name := "n" + strconv.Itoa(i+1)
			bus = append(bus, bp.Addr())
			s.nodes = append(s.nodes, &local.Node{Name: name, Bin: cfg.Bin, Args: cfg.Args, Port: port,
				Dir: filepath.Join(dir, name), Log: filepath.Join(cfg.Out, name+".log"),
				Vars: map[string]string{"bus": strconv.Itoa(busPort), "busannounce": bp.Addr(), "name": name,
					"n": strconv.Itoa(count)}})
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
	for _, p := range append(append([]*local.Proxy(nil), s.proxies...), s.bus...) {
		p.Set(local.Pass, 0)
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
	for _, p := range append(append([]*local.Proxy(nil), s.proxies...), s.bus...) {
		_ = p.Close()
	}
	for _, n := range s.nodes {
		if n.Bin != "" {
			_ = n.Stop(10 * time.Second)
		}
	}
}
