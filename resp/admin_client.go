package resp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// AdminClient is a minimal RESP2 client for the admin subcommands
// (raftstream status, transfer-leader, snapshot): one connection, one
// command at a time. Replies decode to string (simple and bulk strings),
// int64, []any, nil, or an error value of type AdminError.
type AdminClient struct {
	conn    net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

// AdminError is an error reply.
type AdminError string

func (e AdminError) Error() string { return string(e) }

// DialAdmin connects to addr, authenticating with pass when non-empty.
func DialAdmin(addr, pass string, timeout time.Duration) (*AdminClient, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &AdminClient{conn: conn, r: bufio.NewReader(conn), timeout: timeout}
	if pass != "" {
		if _, err := c.Do("AUTH", pass); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close closes the connection.
func (c *AdminClient) Close() error { return c.conn.Close() }

// Do sends one command and returns its reply; an error reply is returned
// as the error.
func (c *AdminClient) Do(args ...string) (any, error) {
	_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return nil, err
	}
	v, err := c.read()
	if err != nil {
		return nil, err
	}
	if e, ok := v.(AdminError); ok {
		return nil, e
	}
	return v, nil
}

func (c *AdminClient) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return AdminError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// StatusRow is one shard replica in a cluster status report.
type StatusRow struct {
	Shard                       int
	NodeID, Addr, Role, Leader  string
	Term, Commit, Applied, Last int64
	LeaderChanges               int64
}

// StatusNode is one cluster member in a status report.
type StatusNode struct {
	ID, Addr string
	Up       bool   // as seen by the queried node
	Err      string // non-empty when RAFTSTREAM STATUS failed on it
}

// ClusterStatus asks addr for the members (CLUSTER NODES), then every
// member for its shard replicas (RAFTSTREAM STATUS).
func ClusterStatus(addr, pass string, timeout time.Duration) ([]StatusNode, []StatusRow, error) {
	c, err := DialAdmin(addr, pass, timeout)
	if err != nil {
		return nil, nil, err
	}
	v, err := c.Do("CLUSTER", "NODES")
	c.Close()
	if err != nil {
		return nil, nil, err
	}
	var nodes []StatusNode
	text, _ := v.(string)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		hp, _, _ := strings.Cut(f[1], "@")
		nodes = append(nodes, StatusNode{ID: f[0], Addr: hp, Up: !strings.Contains(f[2], "fail")})
	}
	if len(nodes) == 0 {
		nodes = []StatusNode{{Addr: addr, Up: true}}
	}
	var rows []StatusRow
	for i := range nodes {
		n := &nodes[i]
		nc, err := DialAdmin(n.Addr, pass, timeout)
		if err != nil {
			n.Err = err.Error()
			continue
		}
		v, err := nc.Do("RAFTSTREAM", "STATUS")
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
			row := StatusRow{NodeID: n.ID, Addr: n.Addr}
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

// WriteStatus prints a status report as two aligned tables: the nodes,
// then one line per shard replica (leader first). LAG is commit - applied.
func WriteStatus(w io.Writer, nodes []StatusNode, rows []StatusRow) error {
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

// ShardLeaderAddr finds the RESP address of the node leading shard, from a
// status report (ClusterStatus); "" when no replica reports leading it.
func ShardLeaderAddr(rows []StatusRow, shard int) string {
	for _, r := range rows {
		if r.Shard == shard && r.Role == "leader" {
			return r.Addr
		}
	}
	return ""
}
