package main

import (
	"os"
	"runtime"
	"strings"
	"syscall"
)

// The Go runtime's monitor thread (sysmon) runs every 20 µs while the
// process works, and backs off (doubling, up to 10 ms) only after some 50
// runs in a row with nothing to do. When every P of the scheduler is idle
// it sleeps until a goroutine enters a system call, and then starts again
// at 20 µs. A node's work comes in bursts, one per log entry: between them
// every P is idle (waiting for the clients, or for fdatasync), so the
// monitor went back to 20 µs on every entry. At pipeline depth 1 that made
// about half of a node's context switches, and a fifth of a follower's
// CPU (measured by SETS="redis:3x2 raftstream:3 raftstream:3:GODEBUG=schedtrace=0"
// cmd/ordersbench/redis-cluster.sh, and by single-node.sh with
// VARIANTS=GODEBUG=schedtrace=0).
//
// With GODEBUG's schedtrace set, the monitor never takes that sleep (it
// stays up to print the scheduler's state every schedtrace milliseconds),
// so it backs off between bursts and stays backed off. The server runs
// with the largest period, 2^31-1 ms (24.8 days): the runtime prints one
// "SCHED" line to stderr once the host's monotonic clock reaches it (at
// start on a host up for longer) and every period after that. Setting
// schedtrace in GODEBUG yourself (schedtrace=0 turns the line and this
// setting off) is left alone; INFO's go_godebug shows the process's.
const sysmonSetting = "schedtrace=2147483647"

// sysmonBackoff re-executes the server (same PID, arguments and
// environment) with sysmonSetting added to GODEBUG, which the runtime
// reads only at start. It returns, doing nothing, when GODEBUG already sets
// schedtrace or where it cannot re-execute (not Linux, or the exec failed:
// the server then runs as it is).
func sysmonBackoff() {
	if runtime.GOOS != "linux" {
		return
	}
	env, ok := withSysmonSetting(os.Environ())
	if !ok {
		return
	}
	_ = syscall.Exec("/proc/self/exe", os.Args, env)
}

// withSysmonSetting returns environ with sysmonSetting added to GODEBUG,
// and false when GODEBUG already sets schedtrace.
func withSysmonSetting(environ []string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	godebug := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug = v
			continue
		}
		out = append(out, kv)
	}
	for _, f := range strings.Split(godebug, ",") {
		if strings.HasPrefix(strings.TrimSpace(f), "schedtrace=") {
			return environ, false
		}
	}
	if godebug != "" {
		godebug += ","
	}
	return append(out, "GODEBUG="+godebug+sysmonSetting), true
}
