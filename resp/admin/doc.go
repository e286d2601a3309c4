// Package admin is a node's admin HTTP server: /metrics in the Prometheus
// text format (0.0.4), /healthz, /readyz and, behind Config.Pprof,
// /debug/pprof/.
//
// The server knows nothing of what it reports. cmd wires in Sources at
// start-up: the readiness question (/readyz and raftstream_ready) and the
// collectors, each of which writes its own series into the Scrape of one
// request through Gauge, Counter and Histogram. Those methods take only
// plain values (names, help texts, numbers, label name/value pairs), so a
// producer can declare the small writer interface it needs without
// importing this package: cluster.Node and resp.Server each do.
//
// Collectors read atomics, Raft's accessors and, for per-stream series,
// the local engines in short stale reads: a scrape never holds up apply for
// long and never waits on Raft.
package admin
