package importer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// endpoint is one side of the import: a client that sends each key's
// commands to the node holding the key.
type endpoint struct {
	name    string // "source" or "target", for messages
	addr    string
	cluster bool
	c       redis.UniversalClient
}

// dial connects to addr. cluster says whether it is a cluster (the
// source: --cluster); nil asks the node (INFO cluster), which is how the
// target is reached. A plain client never retries a command by itself
// (the import re-reads the target and decides again); a cluster client
// follows MOVED/ASK and TRYAGAIN, which say the command was not applied.
func dial(ctx context.Context, name, addr, pass string, cluster *bool, cfg *Config) (*endpoint, error) {
	conns := 2*cfg.Parallel + 2
	probe := redis.NewClient(&redis.Options{Addr: addr, Password: pass, Protocol: 2, DisableIdentity: true,
		DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout, MaxRetries: -1, PoolSize: conns})
	info, err := probe.Info(ctx, "cluster").Result()
	if err != nil {
		probe.Close()
		return nil, fmt.Errorf("%s %s: %w", name, addr, err)
	}
	enabled := strings.Contains(info, "cluster_enabled:1")
	if cluster != nil && *cluster != enabled {
		probe.Close()
		if enabled {
			return nil, fmt.Errorf("%s %s is a Redis Cluster node: add --cluster", name, addr)
		}
		return nil, fmt.Errorf("%s %s is not a cluster node (INFO cluster says cluster_enabled:0): drop --cluster", name, addr)
	}
	e := &endpoint{name: name, addr: addr, cluster: enabled, c: probe}
	if enabled {
		probe.Close()
		e.c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, Password: pass, Protocol: 2,
			DisableIdentity: true, DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
			MaxRedirects: 16, MaxRetries: -1, PoolSize: conns})
	}
	return e, nil
}

func (e *endpoint) Close() error { return e.c.Close() }

// scanStreams lists the stream keys matching match: SCAN … TYPE stream on
// the node, or on every master of a cluster. The keys come back sorted.
func (e *endpoint) scanStreams(ctx context.Context, match string) ([]string, error) {
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			ks, next, err := c.ScanType(ctx, cursor, match, 1000, "stream").Result()
			if err != nil {
				return fmt.Errorf("%s %s: SCAN: %w", e.name, c.Options().Addr, err)
			}
			mu.Lock()
			keys = append(keys, ks...)
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	switch c := e.c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		return nil, err
	}
	// SCAN may return a key twice (a rehash during the scan).
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// lengths is XLEN of every key on r, pipelined in batches of chunk.
func lengths(ctx context.Context, r reader, keys []string, chunk int) ([]int64, error) {
	n := make([]int64, 0, len(keys))
	for len(keys) > 0 {
		b := min(len(keys), chunk)
		cmds := make([][]any, b)
		for i, k := range keys[:b] {
			cmds[i] = []any{"XLEN", k}
		}
		replies, err := r.doAll(ctx, cmds)
		if err != nil {
			return nil, fmt.Errorf("%s: XLEN: %w", r.label(), err)
		}
		for _, v := range replies {
			l, _ := v.(int64)
			n = append(n, l)
		}
		keys = keys[b:]
	}
	return n, nil
}
