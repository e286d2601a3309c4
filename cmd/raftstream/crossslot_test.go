package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// ownerConn returns a connection to the node of addrs that serves slot: it
// asks addrs[0] about a key of the slot and follows one MOVED.
func ownerConn(t *testing.T, addrs []string, key string) *testkit.Conn {
	t.Helper()
	c := dial(t, addrs[0])
	r := do(t, c, "EXISTS", key)
	if strings.HasPrefix(r, "-MOVED ") {
		f := strings.Fields(strings.TrimSpace(r))
		return dial(t, f[2])
	}
	return c
}

// tagsInRange returns n hash tags whose slots differ and lie in r.
func tagsInRange(n int, r slots.Range) []string {
	var out []string
	seen := map[int]bool{}
	for i := 0; len(out) < n; i++ {
		tag := fmt.Sprintf("t%d", i)
		s := slots.OfString(tag)
		if r.Contains(s) && !seen[s] {
			seen[s] = true
			out = append(out, tag)
		}
	}
	return out
}

// TestCrossSlotMatchesRedisCluster runs multi-key commands against a Redis
// Cluster of 3 masters (redis-cli --cluster create) and a 3-node raftstream
// cluster of 3 shards with the same slot layout (0-5460, 5461-10921,
// 10922-16383), each script on one connection to the node serving its
// first key, and requires byte-identical replies: keys in different slots
// get CROSSSLOT even when one node (one shard) serves both slots; hash tags
// keep keys together; a transaction whose commands touch different slots is
// queued and refused as a whole at EXEC; one command across slots inside a
// transaction is refused when queued and aborts it.
func TestCrossSlotMatchesRedisCluster(t *testing.T) {
	redisAddrs := startRedisCluster(t, 3)
	rs := addrsOf(startCluster(t, 3, 3))
	tags := tagsInRange(3, slots.Range{First: 0, Last: 5460})
	far := tagsInRange(1, slots.Range{First: 10922, Last: 16383})[0]
	k := func(tag, name string) string { return "{" + tag + "}" + name }
	a, a2, b, c := k(tags[0], "a"), k(tags[0], "a2"), k(tags[1], "b"), k(tags[2], "c")
	z := k(far, "z")
	scripts := [][][]string{
		{
			{"XADD", a, "1-1", "f", "v"},
			{"XADD", a2, "1-1", "f", "v"},
			{"DEL", a, b},
			{"DEL", a, z},
			{"EXISTS", a, a2},
			{"EXISTS", a, b, c},
			{"XREAD", "STREAMS", a, b, "0", "0"},
			{"XREAD", "COUNT", "1", "STREAMS", a, a2, "0", "0"},
			{"XGROUP", "CREATE", a, "g", "0"},
			{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", a, b, ">", ">"},
			{"RENAME", a, b},
			{"RENAMENX", a, z},
			{"RENAME", a2, k(tags[0], "a3")},
			{"EXISTS", a2, k(tags[0], "a3")},
			{"DEL", a, a2, k(tags[0], "a3")},
		},
		{
			{"MULTI"},
			{"XADD", a, "2-1", "f", "v"},
			{"XADD", b, "2-1", "f", "v"},
			{"EXEC"},
			{"EXISTS", a},
		},
		{
			{"MULTI"},
			{"XADD", a, "3-1", "f", "v"},
			{"DEL", a, b},
			{"EXEC"},
			{"EXISTS", a},
		},
		{
			{"MULTI"},
			{"XADD", a, "4-1", "f", "v"},
			{"XADD", a2, "4-1", "f", "v"},
			{"EXEC"},
			{"DEL", a, a2},
		},
	}
	for i, sc := range scripts {
		first := sc[0]
		if len(first) == 1 { // MULTI
			first = sc[1]
		}
		r, w := ownerConn(t, redisAddrs, first[1]), ownerConn(t, rs, first[1])
		for _, cmd := range sc {
			want, got := do(t, r, cmd...), do(t, w, cmd...)
			if got != want {
				t.Errorf("script %d %q:\n raftstream: %q\n redis:      %q", i, strings.Join(cmd, " "), got, want)
			}
		}
	}
}
