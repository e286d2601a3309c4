package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// clusterBuses reads every member's ID and bus address from CLUSTER NODES
// ("id host:port@bus ...").
func clusterBuses(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := rawBulk(t, addr, "CLUSTER", "NODES")
	re := regexp.MustCompile(`(?m)^(\S+) ([0-9.]+):\d+@(\d+) `)
	got := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2] + ":" + m[3]
	}
	return got
}

// shardReplicas parses INFO replication's "shardN:role=...,applied_index=..." lines
// of the node at addr: the applied index of every local replica.
func shardReplicas(t *testing.T, addr string) map[int]int64 {
	t.Helper()
	info := rawBulk(t, addr, "INFO", "replication")
	re := regexp.MustCompile(`(?m)^shard(\d+):role=[a-z]+,term=\d+,commit_index=\d+,applied_index=(\d+)`)
	out := map[int]int64{}
	for _, m := range re.FindAllStringSubmatch(info, -1) {
		sh, _ := strconv.Atoi(m[1])
		ap, _ := strconv.ParseInt(m[2], 10, 64)
		out[sh] = ap
	}
	return out
}

// A 3-node cluster whose bus is mutual TLS: a fourth node holding a
// certificate of the cluster CA joins, receives replicas (Raft traffic) and
// serves; a node whose certificate comes from another CA (with or without
// the cluster CA as its trust root) cannot join: it stops with an error
// naming the certificate, never becomes a member, and the cluster keeps
// serving every acknowledged write. The joined node is then removed with
// RequestRemoveTLS (plaintext RequestRemove cannot reach a TLS bus).
func TestTLSClusterJoinOnlyWithClusterCertificate(t *testing.T) {
	good := testkit.WriteTLSFiles(t, "cluster")
	other := testkit.WriteTLSFiles(t, "rogue")
	tlsArgs := func(cert, key, ca string) []string {
		return []string{"--tls-cluster", "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca}
	}
	addrs := addrsOf(startCluster(t, 3, 3, append(tlsArgs(good.ServerCert, good.ServerKey, good.CA), "--log-level", "warn")...))
	members := clusterBuses(t, addrs[0])
	if len(members) != 3 {
		t.Fatalf("CLUSTER NODES: %v", members)
	}
	var buses []string
	for _, b := range members {
		buses = append(buses, b)
	}
	join := strings.Join(buses, ",")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8})
	defer cc.Close()
	keys := []string{"{a}s", "{b}s", "{c}s", "{d}s", "{e}s", "{f}s"}
	acked := map[string]int{}
	write := func(round int) {
		for _, k := range keys {
			for attempt := 0; attempt < 50; attempt++ {
				if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"round", strconv.Itoa(round)}}).Err(); err == nil {
					acked[k]++
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	for round := 0; round < 5; round++ {
		write(round)
	}

	// Nodes with a certificate the cluster does not accept.
	for _, tc := range []struct{ name, cert, key, ca string }{
		{"other CA", other.ServerCert, other.ServerKey, other.CA},
		{"other CA's certificate, cluster CA as trust root", other.ServerCert, other.ServerKey, good.CA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rctx, rcancel := context.WithTimeout(ctx, 90*time.Second)
			defer rcancel()
			args := append([]string{"--port", strconv.Itoa(testkit.FreePort(t)), "--cluster-port", strconv.Itoa(testkit.FreePort(t)),
				"--dir", t.TempDir(), "--join", join, "--log-level", "info"}, tlsArgs(tc.cert, tc.key, tc.ca)...)
			start := time.Now()
			out, err := exec.CommandContext(rctx, testkit.Server(t), args...).CombinedOutput()
			if rctx.Err() != nil {
				t.Fatalf("a node with a wrong certificate kept trying to join for 90s:\n%s", tail(out, 3000))
			}
			if err == nil || !bytes.Contains(out, []byte("certificate")) || !bytes.Contains(out, []byte("cluster CA")) {
				t.Fatalf("exit %v; want a failure naming the certificate; output:\n%s", err, tail(out, 3000))
			}
			if bytes.Contains(out, []byte("joined running cluster")) || bytes.Contains(out, []byte("raftstream ready")) {
				t.Errorf("the node reports joining or serving:\n%s", tail(out, 3000))
			}
			t.Logf("refused after %v: %s", time.Since(start).Round(time.Millisecond), lastLine(out))
		})
	}
	for _, a := range addrs {
		if m := clusterBuses(t, a); len(m) != 3 {
			t.Errorf("%s: membership changed after the refused joins: %v", a, m)
		}
	}

	// A node with a certificate of the cluster CA joins and serves.
	n4 := startNode(t, "", append(tlsArgs(good.ServerCert, good.ServerKey, good.CA), "--join", join, "--shards", "3")...)
	var id4 string
	deadline := time.Now().Add(120 * time.Second)
	for {
		m := clusterBuses(t, addrs[0])
		for id, b := range m {
			if b == "127.0.0.1:"+strconv.Itoa(n4.Bus) {
				id4 = id
			}
		}
		reps := shardReplicas(t, n4.Addr)
		applied := 0
		for _, ap := range reps {
			if ap > 0 {
				applied++
			}
		}
		if id4 != "" && len(m) == 4 && applied > 0 {
			t.Logf("joined node %s holds %d replicas, %d with applied entries: %v", id4, len(reps), applied, reps)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node with the cluster CA's certificate did not join and receive a replica in 120s: members %v, replicas %v", m, reps)
		}
		time.Sleep(300 * time.Millisecond)
	}
	write(5)
	// Served through the new node: a cluster client seeded only with it.
	c4 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{n4.Addr}, MaxRedirects: 8})
	defer c4.Close()
	// The balancer is still moving leaderships to the new node, so a read
	// may exhaust the client's redirects while a leader moves: retry,
	// bounded, and log what the retries saw.
	for _, k := range keys {
		var n int64
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			if n, err = c4.XLen(ctx, k).Result(); err == nil {
				break
			}
			t.Logf("XLEN %s through the joined node, attempt %d: %v", k, attempt, err)
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || int(n) < acked[k] {
			t.Errorf("XLEN %s through the joined node: %d, %v (acknowledged %d)", k, n, err, acked[k])
		}
	}

	// Plaintext RequestRemove cannot talk to a TLS bus; the TLS variant can.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	if err := cluster.RequestRemove(rctx, buses[0], id4, 3*time.Second); err == nil {
		t.Error("plaintext RequestRemove was accepted by a TLS bus")
	}
	rcancel()
	bt, err := cluster.LoadBusTLS(good.ClientCert, good.ClientKey, good.CA)
	if err != nil {
		t.Fatal(err)
	}
	badBT, err := cluster.LoadBusTLS(other.ClientCert, other.ClientKey, good.CA)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel = context.WithTimeout(ctx, 10*time.Second)
	if err := cluster.RequestRemoveTLS(rctx, buses[0], id4, 3*time.Second, badBT); err == nil || !cluster.IsCertError(err) {
		t.Errorf("RequestRemoveTLS with another CA's certificate: %v, want a certificate error", err)
	}
	rcancel()
	rctx, rcancel = context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if err := cluster.RequestRemoveTLS(rctx, buses[0], id4, 5*time.Second, bt); err != nil {
		t.Fatalf("RequestRemoveTLS: %v", err)
	}
	deadline = time.Now().Add(90 * time.Second)
	for {
		m := clusterBuses(t, addrs[0])
		if _, ok := m[id4]; !ok && len(m) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("removed node still a member after 90s: %v", m)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, k := range keys {
		var n int64
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			if n, err = cc.XLen(ctx, k).Result(); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || int(n) < acked[k] {
			t.Errorf("after removal XLEN %s = %d, %v; acknowledged %d", k, n, err, acked[k])
		}
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return fmt.Sprint(lines[len(lines)-1])
}
