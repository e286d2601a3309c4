package main

import (
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestDiffEdgeCases: argument errors and connection-state corners of the
// server-local commands, byte for byte against redis-server. (Left out:
// HELLO's client id; CONFIG GET's order, which is sorted here and hash order
// in Redis; DEBUG, disabled by default in Redis 7; CLUSTER, disabled in a
// standalone Redis but always on here, a single node being a one-node
// cluster.)
func TestDiffEdgeCases(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	runDiff(t, rs.Addr, redis, script(
		"AUTH default x",
		"AUTH a b c",
		"AUTH nouser x",
		"CLIENT SETNAME a\nb",
		"CLIENT KILL 1.2.3.4:5",
		"CLIENT KILL ID 999999",
		"CLIENT KILL ID x",
		"CLIENT KILL FOO bar",
		"CLIENT ID x",
		"CLIENT GETNAME x",
		"CLIENT NO-EVICT maybe",
		"CLIENT NO-EVICT on",
		"CONFIG SET stream-node-max-bytes",
		"CONFIG RESETSTAT",
		"ECHO a b",
		"SELECT -1",
		"SELECT 99999999999",
		"WAIT x 0",
		"WAIT 0 x",
		"WAIT 0 -1",
		"TIME x",
		"DBSIZE x",
		"KEYS",
		"SCAN x",
		"SCAN 0 COUNT x",
		"SCAN 0 MATCH",
		"FLUSHALL x",
		"FLUSHALL ASYNC",
		"FUNCTION FLUSH BAD",
		"FUNCTION",
		"COMMAND GETKEYS",
		"COMMAND GETKEYS xadd",
		"COMMAND COUNT x",
		"COMMAND LIST FILTERBY",
		"MULTI",
		"PING",
		"ECHO x",
		"EXEC",
		"MULTI",
		"EXEC",
		"MULTI",
		"RESET",
		"EXEC",
		"MULTI",
		"WATCH x",
		"EXEC",
		"UNWATCH",
		"READONLY",
		"READWRITE",
		"ASKING",
		"MEMORY USAGE nokey",
		"MEMORY NOSUCH",
		"INFO nosuchsection",
		"XREAD BLOCK -1 STREAMS s $",
		"XREAD BLOCK x STREAMS s $",
		"XREAD STREAMS s",
		"XREADGROUP GROUP g c BLOCK 10 STREAMS nokey >",
	))
}
