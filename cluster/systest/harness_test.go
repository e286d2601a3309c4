// Package systest runs real raftstream processes (cmd/raftstream built once
// per test binary, without -race) on 127.0.0.1 and checks the cluster from
// the outside: redis-cli, redis-benchmark, go-redis. Every process is
// killed by PID at cleanup, every loop is bounded.
package systest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "raftstream-systest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "raftstream")
	b := exec.Command("go", "build", "-o", binary, "../../cmd/raftstream")
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := b.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building raftstream: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one raftstream process.
type proc struct {
	t    testing.TB
	name string
	port int
	bus  string
	dir  string
	args []string
	log  string
	cmd  *exec.Cmd
}

func (p *proc) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

func (p *proc) start() {
	p.t.Helper()
	lf, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(binary, p.args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
}

// kill sends SIGKILL to the process (by PID) and reaps it.
func (p *proc) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
	p.cmd = nil
}

// stop sends SIGTERM and waits (bounded) for a graceful exit.
func (p *proc) stop(d time.Duration) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _, _ = p.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
	p.cmd = nil
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// cluster is a set of processes formed together.
type cluster struct {
	t     testing.TB
	root  string
	procs []*proc
	buses []string
	used  map[int]bool
}

func (c *cluster) freePort() int {
	for i := 0; i < 1000; i++ {
		if p := testkit.FreePort(c.t); !c.used[p] {
			c.used[p] = true
			return p
		}
	}
	c.t.Fatal("no free port")
	return 0
}

// newProc prepares (does not start) a node with the given extra flags.
func (c *cluster) newProc(join []string, extra ...string) *proc {
	i := len(c.procs)
	p := &proc{t: c.t, name: fmt.Sprint("n", i), port: c.freePort(), dir: filepath.Join(c.root, fmt.Sprint("n", i))}
	p.bus = "127.0.0.1:" + strconv.Itoa(c.freePort())
	p.log = filepath.Join(c.root, p.name+".log")
	_, busPort, _ := strings.Cut(p.bus, ":")
	p.args = []string{"--port", strconv.Itoa(p.port), "--cluster-port", busPort, "--dir", p.dir,
		"--node-name", p.name, "--log-level", "info",
		"--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms"}
	if len(join) > 0 {
		p.args = append(p.args, "--join", strings.Join(join, ","))
	}
	p.args = append(p.args, extra...)
	c.procs = append(c.procs, p)
	c.t.Cleanup(p.kill)
	return p
}

// startCluster starts n nodes forming a cluster with the given shard count
// and extra flags, and waits until every node answers and CLUSTER SLOTS
// covers all slots with known leaders.
func startCluster(t *testing.T, n, shards int, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, root: t.TempDir(), used: map[int]bool{}}
	var join []string
	for i := 0; i < n; i++ {
		p := c.newProc(nil)
		join = append(join, p.bus)
	}
	c.buses = join
	for _, p := range c.procs {
		p.args = append(p.args, "--join", strings.Join(join, ","), "--bootstrap-expect", strconv.Itoa(n),
			"--shards", strconv.Itoa(shards))
		p.args = append(p.args, extra...)
		p.start()
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.procs {
				t.Logf("--- %s log tail:\n%s", p.name, p.tail())
			}
		}
	})
	for _, p := range c.procs {
		c.waitCovered(p, 60*time.Second)
	}
	return c
}

// client is a plain go-redis client of node p.
func (p *proc) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
}

// waitCovered waits until p's CLUSTER SLOTS covers all 16384 slots.
func (c *cluster) waitCovered(p *proc, d time.Duration) {
	c.t.Helper()
	cl := p.client()
	defer cl.Close()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ss, err := cl.ClusterSlots(ctx).Result()
		cancel()
		if err == nil {
			covered := 0
			for _, s := range ss {
				if len(s.Nodes) > 0 {
					covered += s.End - s.Start + 1
				}
			}
			if covered == slots.Count {
				return
			}
			last = fmt.Sprintf("%d slots covered", covered)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s: CLUSTER SLOTS never covered every slot (%s)\n%s", p.name, last, p.tail())
}

// leaders returns, per node ID, the shards it leads according to p's
// CLUSTER SHARDS, and the shard (by first slot) → leader ID.
func leaders(ctx context.Context, cl *redis.Client) (map[string]int, map[int64]string, error) {
	ss, err := cl.ClusterShards(ctx).Result()
	if err != nil {
		return nil, nil, err
	}
	count, byShard := map[string]int{}, map[int64]string{}
	for _, s := range ss {
		for _, n := range s.Nodes {
			if n.Role == "master" && len(s.Slots) > 0 {
				count[n.ID]++
				byShard[s.Slots[0].Start] = n.ID
			}
		}
	}
	return count, byShard, nil
}

// nodeIDs maps each process to its node ID (CLUSTER MYID).
func (c *cluster) nodeID(p *proc) string {
	cl := p.client()
	defer cl.Close()
	for i := 0; i < 50; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		cancel()
		if err == nil {
			return id
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s: CLUSTER MYID failed", p.name)
	return ""
}

// keyPerShard returns one key with a hash tag per shard of an nShards
// cluster: keys[i] lives on shard i.
func keyPerShard(prefix string, nShards int) []string {
	m := slots.NewMap(nShards)
	keys := make([]string, nShards)
	found := 0
	for i := 0; found < nShards && i < 1_000_000; i++ {
		k := fmt.Sprintf("%s{%d}", prefix, i)
		if s := m.ShardOfKey([]byte(k)); keys[s] == "" {
			keys[s] = k
			found++
		}
	}
	return keys
}

// writeFollowingMoved writes one entry to every key through node addr,
// following MOVED by hand and retrying other refusals every 10 ms (no
// client-side slot cache), and returns how long until all were accepted.
func writeFollowingMoved(t *testing.T, addr string, keys []string, budget time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	t0 := time.Now()
	clients := map[string]*redis.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	get := func(a string) *redis.Client {
		if clients[a] == nil {
			clients[a] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second})
		}
		return clients[a]
	}
	for _, k := range keys {
		target := addr
		for {
			err := get(target).XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"seq", "probe"}}).Err()
			if err == nil {
				break
			}
			if strings.HasPrefix(err.Error(), "MOVED ") {
				target = strings.Fields(err.Error())[2]
				continue
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: no write accepted within %v: %v", k, budget, err)
			}
			target = addr
			time.Sleep(10 * time.Millisecond)
		}
	}
	return time.Since(t0)
}
