package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/raftstream/raftstream/resp/wire"
)

// The client side of the operator subcommands (admin.go): one admin
// command sent to one node, and a status report gathered from every
// member. Replies are read and decoded by resp/wire.

// adminDial connects to addr, authenticating with pass when it is not
// empty; every command sent on the connection may take timeout.
func adminDial(addr, pass string, timeout time.Duration) (*wire.Client, error) {
	c, err := wire.Dial(addr, pass, timeout)
	if err != nil {
		return nil, err
	}
	c.Timeout = timeout
	return c, nil
}

// adminDo sends one command and returns its reply decoded by wire.Parse
// (string, int64, []any, nil); an error reply is returned as the error, a
// wire.Error.
func adminDo(c *wire.Client, args ...string) (any, error) {
	raw, err := c.Do(args...)
	if err != nil {
		return nil, err
	}
	v, err := wire.Parse(raw)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(wire.Error); ok {
		return nil, e
	}
	return v, nil
}

// statusRow is one shard replica in a cluster status report.
type statusRow struct {
	Shard                       int
	NodeID, Addr, Role, Leader  string
	Term, Commit, Applied, Last int64
	LeaderChanges               int64
}

// statusNode is one cluster member in a status report.
type statusNode struct {
	ID, Addr string
	Up       bool   // as seen by the queried node
	Err      string // non-empty when RAFTSTREAM STATUS failed on it
}

// clusterStatus asks addr for the members (CLUSTER NODES), then every
// member for its shard replicas (RAFTSTREAM STATUS).
func clusterStatus(addr, pass string, timeout time.Duration) ([]statusNode, []statusRow, error) {
	c, err := adminDial(addr, pass, timeout)
	if err != nil {
		return nil, nil, err
	}
	v, err := adminDo(c, "CLUSTER", "NODES")
	c.Close()
	if err != nil {
		return nil, nil, err
	}
	var nodes []statusNode
	text, _ := v.(string)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		hp, _, _ := strings.Cut(f[1], "@")
		nodes = append(nodes, statusNode{ID: f[0], Addr: hp, Up: !strings.Contains(f[2], "fail")})
	}
	if len(nodes) == 0 {
		nodes = []statusNode{{Addr: addr, Up: true}}
	}
	var rows []statusRow
	for i := range nodes {
		n := &nodes[i]
		nc, err := adminDial(n.Addr, pass, timeout)
		if err != nil {
			n.Err = err.Error()
			continue
		}
		v, err := adminDo(nc, "RAFTSTREAM", "STATUS")
		nc.Close()
		if err != nil {
			n.Err = err.Error()
			continue
		}
		list, _ := v.([]any)
		for _, r := range list {
			f, _ := r.([]any)
			if len(f) < 8 {
				continue
			}
			row := statusRow{NodeID: n.ID, Addr: n.Addr}
			sh, _ := f[0].(int64)
			row.Shard = int(sh)
			row.Role, _ = f[1].(string)
			row.Term, _ = f[2].(int64)
			row.Commit, _ = f[3].(int64)
			row.Applied, _ = f[4].(int64)
			row.Last, _ = f[5].(int64)
			row.Leader, _ = f[6].(string)
			row.LeaderChanges, _ = f[7].(int64)
			rows = append(rows, row)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Shard != rows[j].Shard {
			return rows[i].Shard < rows[j].Shard
		}
		if (rows[i].Role == "leader") != (rows[j].Role == "leader") {
			return rows[i].Role == "leader"
		}
		return rows[i].Addr < rows[j].Addr
	})
	return nodes, rows, nil
}

// writeStatus prints a status report as two aligned tables: the nodes,
// then one line per shard replica (leader first). LAG is commit - applied.
func writeStatus(w io.Writer, nodes []statusNode, rows []statusRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDR\tSTATE\tREPLICAS\tLEADS")
	for _, n := range nodes {
		state := "up"
		if !n.Up {
			state = "down"
		}
		if n.Err != "" {
			state = "unreachable (" + n.Err + ")"
		}
		reps, leads := 0, 0
		for _, r := range rows {
			if r.Addr == n.Addr {
				reps++
				if r.Role == "leader" {
					leads++
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", short(n.ID), n.Addr, state, reps, leads)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SHARD\tNODE\tADDR\tROLE\tTERM\tCOMMIT\tAPPLIED\tLAG\tLEADER\tLEADER-CHANGES")
	for _, r := range rows {
		leader := short(r.Leader)
		if leader == "" {
			leader = "NONE"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\n", r.Shard, short(r.NodeID), r.Addr, r.Role,
			r.Term, r.Commit, r.Applied, r.Commit-r.Applied, leader, r.LeaderChanges)
	}
	return tw.Flush()
}

// short abbreviates a 40-hex node ID to 8 characters.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// shardLeaderAddr finds the RESP address of the node leading shard, from a
// status report (clusterStatus); "" when no replica reports leading it.
func shardLeaderAddr(rows []statusRow, shard int) string {
	for _, r := range rows {
		if r.Shard == shard && r.Role == "leader" {
			return r.Addr
		}
	}
	return ""
}
