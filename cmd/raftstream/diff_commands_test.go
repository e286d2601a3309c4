package main

import (
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestDiffEveryStreamCommand runs every stream and keyspace command the
// table routes to the engine through the server, against redis-server 7.0.
// (HELP texts and XREAD's "+" ID follow Redis 7.4 in the engine and are left
// out: the installed redis-server is 7.0.)
func TestDiffEveryStreamCommand(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	runDiff(t, rs.Addr, redis, script(
		"XADD s 1-1 a 1",
		"XADD s 2-1 b 2",
		"XADD s 3-1 c 3",
		"XADD s MAXLEN = 10 4-1 d 4",
		"XADD s NOMKSTREAM 5-1 e 5",
		"XADD nos NOMKSTREAM 5-1 e 5",
		"XREVRANGE s + - COUNT 2",
		"XRANGE s (1-1 +",
		"XDEL s 2-1 99-9",
		"XLEN s",
		"XTRIM s MAXLEN 2",
		"XTRIM s MINID 4",
		"XSETID s 10-0",
		"XSETID s 4-0", // below the top item, not below max-deleted-entry-id (7.4 refuses that)
		"XINFO STREAM s",
		"XGROUP CREATE s g 0",
		"XGROUP CREATECONSUMER s g alice",
		"XGROUP SETID s g 0",
		"XREADGROUP GROUP g bob COUNT 1 STREAMS s >",
		"XCLAIM s g carol 0 4-1 JUSTID",
		"XAUTOCLAIM s g dave 0 0-0 COUNT 10 JUSTID",
		"XINFO GROUPS s",
		"XGROUP DELCONSUMER s g alice",
		"XGROUP DESTROY s g",
		"XGROUP DESTROY s g",
		"XINFO GROUPS s",
		"SET str hello",
		"GET str",
		"TYPE str",
		"TYPE s",
		"TYPE none",
		"RENAME str str2",
		"GET str2",
		"RENAME nokey x",
		"OBJECT ENCODING s",
		"OBJECT ENCODING str2",
		"UNLINK str2",
		"EXISTS s str2",
		"XACK s nog 1-1",
		"XPENDING s nog",
		"XADD s * a",
		"XADD s 0-0 a 1",
		"XRANGE s x y",
		"DBSIZE",
		"KEYS *",
		"SCAN 0",
		"FLUSHALL",
		"DBSIZE",
	))
}
