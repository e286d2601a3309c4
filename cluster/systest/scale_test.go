//go:build scale

package systest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestSystemBusTrafficScales (point 4) measures the background traffic on
// the cluster bus of idle clusters of 3, 9 and 30 local processes, as every
// node counts it (INFO bus: requests sent — Raft RPCs, node RPCs, gossip
// datagrams and streams — and bytes sent plus received), with gossip as
// the failure detector (the default) and, for comparison, with gossip off
// (every node polls every node: N² status requests). It takes about five
// minutes on the 2-core dev box, so it sits behind the scale build tag:
//
//	go test -tags scale -run TestSystemBusTrafficScales -v ./cluster/systest/
//
// To fit 30 processes on two cores every node runs with GOMAXPROCS=1, a
// 96 MiB soft memory limit, one shard (three replicas), 2 s Raft heartbeat
// and election timeouts and warn logging. The check: with gossip, the
// cluster's total background requests and bytes per second grow no faster
// than linearly in the node count (per node they stay within 1.5× of the
// 3-node figure), while with polling the requests per node grow with N
// (the table printed at the end is the one in cluster/DESIGN.md).
func TestSystemBusTrafficScales(t *testing.T) {
	t.Setenv("GOMAXPROCS", "1")
	t.Setenv("GOMEMLIMIT", "96MiB")
	const window = 30 * time.Second
	type row struct {
		n                  int
		mode               string
		reqAvg, reqMax     float64
		fdAvg, fdMax       float64 // requests other than Raft's: failure detection and metadata
		bytesAvg, bytesMax float64
	}
	var rows []row
	for _, tc := range []struct {
		n      int
		gossip string
	}{{3, ""}, {9, ""}, {30, ""}, {3, "off"}, {9, "off"}, {30, "off"}} {
		args := []string{"--log-level", "warn", "--raft-heartbeat-timeout", "2s", "--raft-election-timeout", "2s",
			"--snapshot-interval", "60s"}
		mode := "gossip (bus port)"
		if tc.gossip != "" {
			args = append(args, "--gossip-addr", tc.gossip)
			mode = "polls (gossip off)"
		}
		t.Run(fmt.Sprintf("%d-%s", tc.n, strings.Fields(mode)[0]), func(t *testing.T) {
			c := newCluster(t, tc.n, 1, args...)
			t0 := time.Now()
			testkit.StartAll(t, c.procs...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// Settled: every node serves, sees every member up and, with
			// gossip, every member in memberlist.
			waitUntil(t, "settled", 3*time.Minute, func() bool {
				for _, p := range c.procs {
					info, err := infoMap(ctx, p.Addr, "bus")
					if err != nil || tc.gossip == "" && info["gossip_members"] != strconv.Itoa(tc.n) {
						return false
					}
					ci, err := clusterInfo(ctx, p.Addr)
					if err != nil || ci["cluster_known_nodes"] != strconv.Itoa(tc.n) || ci["cluster_state"] != "ok" {
						return false
					}
				}
				return true
			})
			t.Logf("%d nodes settled %v after start", tc.n, time.Since(t0).Round(time.Millisecond))
			time.Sleep(5 * time.Second)
			before, tb := sample(ctx, t, c.procs), time.Now()
			time.Sleep(window)
			after, ta := sample(ctx, t, c.procs), time.Now()
			secs := ta.Sub(tb).Seconds()
			r := row{n: tc.n, mode: mode}
			for i := range c.procs {
				req := float64(after[i].req-before[i].req) / secs
				fd := req - float64(after[i].raft-before[i].raft)/secs
				by := float64(after[i].bytes-before[i].bytes) / secs
				r.reqAvg += req / float64(tc.n)
				r.fdAvg += fd / float64(tc.n)
				r.fdMax = max(r.fdMax, fd)
				r.bytesAvg += by / float64(tc.n)
				r.reqMax, r.bytesMax = max(r.reqMax, req), max(r.bytesMax, by)
			}
			t.Logf("%d nodes, %s: per node %.1f requests/s (max %.1f; not Raft %.1f, max %.1f), %.0f bytes/s (max %.0f); cluster %.0f requests/s, %.0f bytes/s",
				tc.n, mode, r.reqAvg, r.reqMax, r.fdAvg, r.fdMax, r.bytesAvg, r.bytesMax, r.reqAvg*float64(tc.n), r.bytesAvg*float64(tc.n))
			rows = append(rows, r)
		})
	}
	var b strings.Builder
	b.WriteString("\n| nodes | failure detection | requests/s per node (max) | of which not Raft (max) | bytes/s per node (max) | cluster requests/s | cluster bytes/s |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %.1f (%.1f) | %.1f (%.1f) | %.0f (%.0f) | %.0f | %.0f |\n", r.n, r.mode, r.reqAvg, r.reqMax, r.fdAvg, r.fdMax,
			r.bytesAvg, r.bytesMax, r.reqAvg*float64(r.n), r.bytesAvg*float64(r.n))
	}
	t.Log(b.String())
	var g3 *row
	for i, r := range rows {
		if r.mode == rows[0].mode && r.n == 3 {
			g3 = &rows[i]
		}
	}
	for _, r := range rows {
		if r.mode != g3.mode || r.n == 3 {
			continue
		}
		if r.reqAvg > 1.5*g3.reqAvg || r.bytesAvg > 1.5*g3.bytesAvg {
			t.Errorf("%d nodes with gossip: %.1f requests/s and %.0f bytes/s per node, more than 1.5× the 3-node %.1f and %.0f: faster than linear in total",
				r.n, r.reqAvg, r.bytesAvg, g3.reqAvg, g3.bytesAvg)
		}
	}
}

// clusterInfo returns CLUSTER INFO of the node at addr as key → value.
func clusterInfo(ctx context.Context, addr string) (map[string]string, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	defer cl.Close()
	s, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// busSample is one node's bus counters.
type busSample struct{ req, raft, bytes uint64 }

// sample reads INFO bus of every node (in parallel, so the samples are
// close in time).
func sample(ctx context.Context, t *testing.T, procs []*testkit.Node) []busSample {
	t.Helper()
	out := make([]busSample, len(procs))
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() {
			info, err := infoMap(ctx, p.Addr, "bus")
			if err != nil {
				errs[i] = err
				return
			}
			req, _ := strconv.ParseUint(info["bus_requests_sent"], 10, 64)
			raft, _ := strconv.ParseUint(info["bus_raft_requests_sent"], 10, 64)
			sent, _ := strconv.ParseUint(info["bus_bytes_sent"], 10, 64)
			recv, _ := strconv.ParseUint(info["bus_bytes_received"], 10, 64)
			out[i] = busSample{req: req, raft: raft, bytes: sent + recv}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: INFO bus: %v", procs[i].Name, err)
		}
	}
	return out
}
