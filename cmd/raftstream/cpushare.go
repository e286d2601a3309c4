package main

import (
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
)

// cpuShare sizes GOMAXPROCS to the work a node can run in parallel and to
// its share of the host's CPUs: ⌈CPUs / co-located nodes⌉, and at most one
// P per shard replica the node hosts (at least one).
//
// The share: a node of a cluster whose other nodes run on the same host
// (docker compose on one machine, a laptop's test cluster, pods packed onto
// one kubernetes node) shares the host's CPUs with them. Each Go runtime
// would otherwise schedule as if it had them all: idle threads spin looking
// for work that runs on another process's CPU, and a hand-off between
// goroutines wakes a thread that must first win a CPU back. Three
// co-located nodes on a 2-CPU host, each at GOMAXPROCS=1, made 13–16% fewer
// context switches per XADD and spent about 8% less CPU per XADD, summed
// over the nodes, than at GOMAXPROCS=2 (SETS="redis:3x2 raftstream:3x3
// raftstream:3x3:RAFTSTREAM_HOST_ID=none" cmd/ordersbench/redis-cluster.sh).
// Co-located members are the ones gossip finds with the same --host-id (by
// default the kernel's boot ID, which containers share with their host).
//
// The shards: a replica's writes go through one serial chain of goroutines
// (batcher, Raft's loops, the node log's writer, the apply), each handing
// off to the next. A P beyond the work there is to run sits idle, and the
// runtime wakes a thread for it at every hand-off, which then finds nothing
// and sleeps again. One node with one shard on a 2-CPU host, at GOMAXPROCS=1
// instead of 2, made 0.12 against 0.31 context switches and spent 22 against
// 33 CPU µs per XADD at redis-benchmark -P 1, and 2.3 against 3.0 µs at
// -P 16, with more XADD/s at both (VARIANTS=GOMAXPROCS=2
// cmd/ordersbench/single-node.sh xadd).
//
// cpuShare does nothing when GOMAXPROCS is set in the environment (the
// operator's setting wins) or when the runtime's default is already below
// the CPU count (a container CPU limit: that share is the container's own).
type cpuShare struct {
	log       *slog.Logger
	full      int // the runtime's default GOMAXPROCS
	mu        sync.Mutex
	colocated int // nodes on this host, this one included (at least 1)
	hosted    int // shard replicas this node hosts
}

// newCPUShare returns the policy, or nil when it must leave GOMAXPROCS
// alone (see cpuShare).
func newCPUShare(log *slog.Logger) *cpuShare {
	if os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	full := runtime.GOMAXPROCS(0)
	if full < runtime.NumCPU() {
		return nil
	}
	return &cpuShare{log: log, full: full, colocated: 1}
}

// setCoLocated sizes GOMAXPROCS for n nodes on this host, this one included.
func (c *cpuShare) setCoLocated(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.colocated = max(1, n)
	c.apply()
}

// setHosted sizes GOMAXPROCS for n shard replicas hosted here.
func (c *cpuShare) setHosted(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hosted = n
	c.apply()
}

// want is the GOMAXPROCS the policy gives the node.
func (c *cpuShare) want() int {
	return min((c.full+c.colocated-1)/c.colocated, max(1, c.hosted))
}

// apply sets GOMAXPROCS to want, and logs the change. c.mu is held.
func (c *cpuShare) apply() {
	want := c.want()
	if runtime.GOMAXPROCS(0) == want {
		return
	}
	if want == c.full {
		runtime.SetDefaultGOMAXPROCS()
	} else {
		runtime.GOMAXPROCS(want)
	}
	c.log.Info("sizing GOMAXPROCS to the shards hosted here and the host's share", "gomaxprocs", want,
		"shards_hosted", c.hosted, "colocated_nodes", c.colocated, "cpus", c.full)
}

// hostID is --host-id, or when that is empty the kernel's boot ID (shared
// by every container of a host), or "" where there is none (each node then
// counts itself alone). "none" turns the detection off.
func hostID(flag string) string {
	switch flag {
	case "none":
		return ""
	case "":
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	return flag
}
