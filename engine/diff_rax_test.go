package engine_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp"
)

// TestDiffRaxShape compares radix-tree-keys (node count, from the node
// splitting rules) and radix-tree-nodes (the radix tree's shape) of XINFO
// STREAM with redis-server, for several node caps, IDs spreads, deletions
// and trims.
func TestDiffRaxShape(t *testing.T) {
	addr := newDiffRedis(t)
	re := regexp.MustCompile(`radix-tree-keys\r\n:(\d+)\r\n\$16\r\nradix-tree-nodes\r\n:(\d+)\r\n`)
	type cfg struct{ entries, bytes int }
	for _, c := range []cfg{{100, 4096}, {3, 4096}, {0, 200}, {7, 150}, {1, 0}} {
		for _, spread := range []int{1, 250, 70000} {
			t.Run(fmt.Sprintf("e%d-b%d-spread%d", c.entries, c.bytes, spread), func(t *testing.T) {
				d := newDiffSession(t, addr, 2)
				d.run([][]string{
					{"CONFIG", "SET", "stream-node-max-entries", fmt.Sprint(c.entries)},
					{"CONFIG", "SET", "stream-node-max-bytes", fmt.Sprint(c.bytes)},
				})
				compare := func(step string) {
					want, _, _ := d.do([]string{"XINFO", "STREAM", "s"})
					got := resp.AppendReply(nil, d.e.Exec(d.now, [][]byte{[]byte("XINFO"), []byte("STREAM"), []byte("s")}), 2)
					w, g := re.FindSubmatch(want), re.FindSubmatch(got)
					if w == nil || g == nil {
						t.Fatalf("%s: no radix fields:\nredis  %q\nengine %q", step, want, got)
					}
					if string(w[0]) != string(g[0]) {
						t.Fatalf("%s: redis %q engine %q", step, w[0], g[0])
					}
				}
				var cmds [][]string
				for i := 1; i <= 400; i++ {
					ms := i * spread
					vals := []string{"XADD", "s", fmt.Sprintf("%d-%d", ms, i%5), "customer", fmt.Sprintf("c%07d", i), "amount", fmt.Sprint(i * 37 % 100000)}
					if i%9 == 0 {
						vals = append(vals, "extra", strings.Repeat("x", i%60))
					}
					cmds = append(cmds, vals)
				}
				d.run(cmds)
				compare("after adds")
				var dels [][]string
				for i := 3; i <= 400; i += 4 {
					dels = append(dels, []string{"XDEL", "s", fmt.Sprintf("%d-%d", i*spread, i%5)})
				}
				d.run(dels)
				compare("after deletes")
				d.run([][]string{{"XTRIM", "s", "MAXLEN", "~", "150"}, {"XTRIM", "s", "MAXLEN", "120"}, {"XLEN", "s"}})
				compare("after trims")
			})
		}
	}
	_ = engine.DefaultConfig
}
