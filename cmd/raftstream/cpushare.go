package main

import (
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
)

// A node of a cluster whose other nodes run on the same host (docker
// compose on one machine, a laptop's test cluster, pods packed onto one
// kubernetes node) shares the host's CPUs with them. Each Go runtime would
// otherwise schedule as if it had them all: with GOMAXPROCS at the host's
// CPU count in every process, idle threads spin looking for work that runs
// on another process's CPU, and a hand-off between goroutines wakes a
// thread that must first win a CPU back. Three co-located nodes on a 2-CPU
// host, each at GOMAXPROCS=1, made 13–16% fewer context switches per XADD
// and spent about 8% less CPU per XADD, summed over the nodes, than at
// GOMAXPROCS=2 (cmd/ordersbench/PERFORMANCE.md).
//
// cpuShare therefore sets GOMAXPROCS to ⌈CPUs / co-located nodes⌉ whenever
// the cluster's gossip finds members on this host (cluster.Node.CoLocated:
// the same --host-id, by default the kernel's boot ID, which containers
// share with their host), and gives the runtime its default back when it
// finds none. It does nothing when GOMAXPROCS is set in the environment
// (the operator's setting wins) or when the runtime's default is already
// below the CPU count (a container CPU limit: that share is the
// container's own).
type cpuShare struct {
	log  *slog.Logger
	full int // the runtime's default GOMAXPROCS
	mu   sync.Mutex
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
	return &cpuShare{log: log, full: full}
}

// set sizes GOMAXPROCS for n nodes on this host, this one included.
func (c *cpuShare) set(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	want := c.full
	if n > 1 {
		want = (c.full + n - 1) / n
	}
	if runtime.GOMAXPROCS(0) == want {
		return
	}
	if want == c.full {
		runtime.SetDefaultGOMAXPROCS()
	} else {
		runtime.GOMAXPROCS(want)
	}
	c.log.Info("sharing the host's CPUs with the cluster's other nodes on it", "colocated_nodes", n, "gomaxprocs", want, "cpus", c.full)
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
