// Package cluster is a raftstream node: it hosts one Raft group (an
// fsm.Shard) per shard on a single TCP port, bootstraps and restarts them,
// routes Submit/Read to local replicas, and describes the cluster to the
// RESP server (cmd wires it in as resp.Backend) and to the admin server
// (CollectMetrics writes its /metrics series, Ready answers /readyz).
//
// Lifecycle: Open(cfg) validates the config, creates or reopens Dir (node ID
// and shard count persisted in Dir/node.json), opens the cluster bus
// listener and every local shard; Start(ctx) forms or restarts the cluster
// and starts the background loops (snapshot scheduler, leader balancer);
// Close transfers leadership away where other voters exist, closes shards,
// then the transport.
//
// See DESIGN.md beside this file for the transport mux, formation and
// placement.
package cluster
