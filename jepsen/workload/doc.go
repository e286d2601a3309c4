// Package workload drives the streams workload of the fault-injection suite
// against any server that speaks the Redis protocol and records every
// operation in a history (package jepsen/history).
//
// Clients append unique values ("<process>-<n>") with XADD, read whole
// streams with XRANGE, tail them with XREAD, and consume them through one
// consumer group with XREADGROUP, XACK, XAUTOCLAIM and XPENDING. Each
// operation is recorded as invoke + ok/fail/info; errors are classified by
// history.Classify and the client never retries (go-redis retries are
// disabled), so an unknown outcome stays unknown in the history.
//
// A run is Setup (create the groups), Run (the randomized phase, during
// which a nemesis may inject faults), the caller's heal, then Final (every
// operation kind once more, the group drained, and a full read of every
// stream last), so that the checkers' final-window checks have what they
// need.
package workload
