// Package local is the loopback side of the fault-injection harness: the
// network faults a cluster of local processes can be put through without
// root, network namespaces or tc (which this machine lacks).
//
// Every directed link between two endpoints goes through its own userspace
// TCP Proxy listening on 127.0.0.1. A proxy's Mode is one of:
//
//   - Pass: bytes flow unchanged.
//   - Delay: every chunk is delivered Delay after it arrived, in order.
//   - Stall: nothing is delivered; bytes are held (as TCP would retransmit
//     them across a short partition) and released in order when the mode
//     changes.
//   - Blackhole: bytes are dropped; connections that lost bytes are reset
//     when the mode changes, so no peer ever sees a stream with a hole.
//   - Reset: existing connections are reset (RST) and new ones are reset as
//     soon as they are accepted.
//
// Net holds the proxies of a set of named endpoints and applies
// partition-shaped schedules (Partition, Isolate, Heal) to them.
//
// Node starts, kills (SIGKILL by PID), stops and restarts one server
// process on a fixed port and data directory; it is the one place a server
// process is started and stopped (jepsen/testkit's test nodes are Nodes).
// BuildServer builds cmd/raftstream for the runner's profiles and for tests.
//
// Node-to-node links of a raftstream cluster: each node announces its real
// bus address, and the runner starts node i with --debug-dial-map (test
// only) so that dialing node j's bus dials the proxy of link ni→nj instead.
package local
