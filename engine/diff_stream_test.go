package engine_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Differential scripts for the stream and keyspace commands. Every reply is
// compared byte for byte with redis-server (RESP2 and RESP3).

func TestDiffXAdd(t *testing.T) {
	runDiff(t, script(
		"XADD s 1-1 a 1",
		"XADD s 1-1 a 1",
		"XADD s 1-0 a 1",
		"XADD s 0-0 a 1",
		"XADD s2 0-0 a 1",
		"EXISTS s2",
		"XADD s 1-* b 2",
		"XADD s 1-* b 2",
		"XADD s 5 c 3",
		"XADD s 5 c 3",
		"XADD s 5-* c 3",
		"XADD s 4-* c 3",
		"XADD s 0-* c 3",
		"XADD s2 0-* c 3",
		"XADD s 6-1",
		"XADD s 6-1 a",
		"XADD s 6-1 a b c",
		"XADD s",
		"XADD s 6-x a b",
		"XADD s x a b",
		"XADD s - a b",
		"XADD s + a b",
		"XADD s 18446744073709551616 a b",
		"XADD s 18446744073709551615-18446744073709551615 a b",
		"XADD s 18446744073709551615-* a b",
		"! XADD s * a b",
		"XLEN s",
		"XADD s3 18446744073709551615-18446744073709551614 a b",
		"XADD s3 18446744073709551615-* a b",
		"XADD s3 18446744073709551615-* a b",
		"XADD s4 NOMKSTREAM 1-1 a b",
		"EXISTS s4",
		"XADD s NOMKSTREAM 1-1 a b",
		"XADD s4 MAXLEN 1 LIMIT 1 1-1 a b",
		"XADD s4 LIMIT 1 1-1 a b",
		"XADD s4 LIMIT 0 1-1 a b",
		"XADD s4 LIMIT -1 1-1 a b",
		"XADD s4 MAXLEN -1 1-1 a b",
		"XADD s4 MAXLEN x 1-1 a b",
		"XADD s4 MAXLEN 1 MINID 1 1-1 a b",
		"XADD s4 MINID 1 MAXLEN 1 1-1 a b",
		"XADD s4 MINID - 1-1 a b",
		"XADD s4 MINID 1-* 1-1 a b",
		"XADD s4 MAXLEN",
		"XADD s4 MAXLEN 5",
		"XADD s4 MAXLEN ~ 5 LIMIT 10 1-1 a b",
		"XADD s4 MAXLEN = 5 1-2 a b",
		"XADD s4 maxlen ~ 5 limit 0 1-3 a b",
		"XADD s4 MAXLEN ~ 5 LIMIT x 1-4 a b",
		"XRANGE s4 - +",
		"SET str v",
		"XADD str 1-1 a b",
		"XADD str NOMKSTREAM 1-1 a b",
		"XADD s5 1-1 a b a c",
		"XRANGE s5 - +",
		"XADD s5 2 12345 -7 007 0 x -0",
		"XRANGE s5 - +",
	))
}

func TestDiffXRange(t *testing.T) {
	cmds := [][]string{}
	for i := 1; i <= 30; i++ {
		f := "f"
		if i%7 == 0 {
			f = "g"
		}
		cmds = append(cmds, []string{"XADD", "s", fmt.Sprintf("%d-%d", i/3, i%3), f, strconv.Itoa(i * 1000), "x", "y"})
	}
	cmds = append(cmds, script(
		"XRANGE s - +",
		"XREVRANGE s + -",
		"XRANGE s 3 5",
		"XRANGE s 3-1 5-1",
		"XRANGE s (3-1 (5-1",
		"XREVRANGE s (5-1 (3-1",
		"XREVRANGE s 5 3",
		"XRANGE s - + COUNT 3",
		"XRANGE s - + COUNT 0",
		"XRANGE s - + COUNT -1",
		"XREVRANGE s + - COUNT 2",
		"XRANGE s - + COUNT",
		"XRANGE s - + COUNT x",
		"XRANGE s - + FOO 1",
		"XRANGE s (- +",
		"XRANGE s - (+",
		"XRANGE s ( +",
		"XRANGE s (18446744073709551615-18446744073709551615 +",
		"XRANGE s - (0-0",
		"XRANGE s x +",
		"XRANGE s 5 3",
		"XRANGE nokey - +",
		"XRANGE nokey - + COUNT 0",
		"XREVRANGE nokey + -",
		"XRANGE s",
		"XDEL s 3-0 3-1 4-2 99-0",
		"XRANGE s 2 5",
		"XREVRANGE s 5 2",
		"XLEN s",
		"XLEN nokey",
		"SET str v",
		"XRANGE str - +",
		"XLEN str",
	)...)
	runDiff(t, cmds)
}

func TestDiffXDel(t *testing.T) {
	cmds := script(
		"XDEL nokey 1-1",
		"XDEL nokey bad",
		"XADD s 1-1 a 1",
		"XADD s 2-1 a 2",
		"XADD s 3-1 a 3",
		"XDEL s bad",
		"XDEL s 1-1 bad",
		"XLEN s",
		"XDEL s 2-1",
		"XDEL s 2-1",
		"XRANGE s - +",
		"XDEL s 1-1 3-1",
		"XLEN s",
		"XRANGE s - +",
		"XADD s 4-1 a 4",
		"XRANGE s - +",
		"XADD s 3-1 a 4",
		"XDEL s - +",
		"XDEL s 4",
		"XLEN s",
		"SET str v",
		"XDEL str 1-1",
	)
	runDiff(t, cmds)
}

func TestDiffXTrim(t *testing.T) {
	cmds := [][]string{}
	add := func(key string, n int) {
		for i := 1; i <= n; i++ {
			cmds = append(cmds, []string{"XADD", key, fmt.Sprintf("%d-1", i), "k", "v"})
		}
	}
	cmds = append(cmds, script("CONFIG SET stream-node-max-entries 10")...)
	add("s", 95)
	cmds = append(cmds, script(
		"XTRIM s MAXLEN ~ 80",
		"XLEN s",
		"XTRIM s MAXLEN ~ 75",
		"XLEN s",
		"XTRIM s MAXLEN = 73",
		"XLEN s",
		"XRANGE s - + COUNT 2",
		"XTRIM s MAXLEN ~ 0 LIMIT 25",
		"XLEN s",
		"XTRIM s MINID ~ 60",
		"XLEN s",
		"XTRIM s MINID 62",
		"XRANGE s - + COUNT 2",
		"XTRIM s MINID 62-2",
		"XTRIM s MAXLEN 5",
		"XRANGE s - +",
		"XTRIM s MAXLEN 0",
		"XLEN s",
		"EXISTS s",
		"XTRIM nokey MAXLEN 0",
		"XTRIM s",
		"XTRIM s FOO",
		"XTRIM s LIMIT 5",
		"XTRIM s MAXLEN 1 LIMIT 5",
		"XTRIM s MAXLEN",
		"XTRIM s MAXLEN -1",
		"XTRIM s MINID x",
		"XTRIM s MAXLEN 1 MINID 1",
		"XTRIM s MAXLEN 1 1",
		"XTRIM s NOMKSTREAM MAXLEN 1",
		"SET str v",
		"XTRIM str MAXLEN 1",
	)...)
	add("t", 50)
	cmds = append(cmds, script(
		"XDEL t 20-1 21-1 22-1",
		"XTRIM t MINID 23",
		"XRANGE t - + COUNT 1",
		"XDEL t 30-1",
		"XTRIM t MINID 31",
		"XLEN t",
		"XADD t MAXLEN ~ 5 51-1 k v",
		"XLEN t",
		"XADD t MAXLEN 5 52-1 k v",
		"XLEN t",
		"XRANGE t - +",
		"XADD t MINID 52 53-1 k v",
		"XRANGE t - +",
		"CONFIG SET stream-node-max-entries 0",
		"CONFIG SET stream-node-max-bytes 120",
	)...)
	add("u", 60)
	cmds = append(cmds, script(
		"XTRIM u MAXLEN ~ 30",
		"XLEN u",
		"XTRIM u MAXLEN ~ 10 LIMIT 5",
		"XLEN u",
		"XADD u MAXLEN ~ 2 61-1 k v",
		"XLEN u",
	)...)
	runDiff(t, cmds)
}

func TestDiffXRead(t *testing.T) {
	runDiff(t, script(
		"XREAD STREAMS s 0",
		"XADD s 1-1 a 1",
		"XADD s 2-1 a 2",
		"XADD t 1-5 b 1",
		"XREAD STREAMS s 0",
		"XREAD STREAMS s t 0 0",
		"XREAD COUNT 1 STREAMS s t 0 0",
		"XREAD COUNT 1 STREAMS s t 1-1 0",
		"XREAD STREAMS s t $ $",
		"XREAD STREAMS s nokey 0 0",
		"XREAD STREAMS s 2-1",
		"XREAD STREAMS s",
		"XREAD COUNT x STREAMS s 0",
		"XREAD COUNT -5 STREAMS s 0",
		"XREAD BLOCK -1 STREAMS s 0",
		"XREAD BLOCK x STREAMS s 0",
		"XREAD BLOCK 10 STREAMS s 0",
		"XREAD FOO STREAMS s 0",
		"XREAD GROUP g c STREAMS s 0",
		"XREAD NOACK STREAMS s 0",
		"XREAD STREAMS s >",
		"XREAD STREAMS s -",
		"XREAD STREAMS s bad",
		"XREAD COUNT 1",
		"XDEL s 2-1",
		"XREAD STREAMS s 1-1",
		"SET str v",
		"XREAD STREAMS str 0",
		"XREAD STREAMS s str 0 0",
	))
}

func TestDiffXSetID(t *testing.T) {
	runDiff(t, script(
		"XSETID nokey 1-1",
		"XADD s 5-1 a 1",
		"XADD s 6-1 a 1",
		"XSETID s 5-0",
		"XSETID s 6-1",
		"XSETID s 7-1",
		"XADD s 7-1 a 1",
		"XADD s 8-1 a 1",
		"XSETID s bad",
		"XSETID s 9-9 ENTRIESADDED 1",
		"XSETID s 9-9 ENTRIESADDED -1",
		"XSETID s 9-9 ENTRIESADDED x",
		"XSETID s 9-9 MAXDELETEDID 10-0",
		"XSETID s 9-9 MAXDELETEDID 3-0 ENTRIESADDED 10",
		"XSETID s 9-9 FOO 1",
		"XSETID s 9-9 ENTRIESADDED",
		"XDEL s 6-1",
		// Below the top item, not below max-deleted-entry-id (an ID below
		// that is refused by 7.4 only: TestStream74Replies).
		"XSETID s 7-0",
		"XSETID s 9-9 MAXDELETEDID 9-8",
		"XSETID s 9-8",
		"XSETID s 9-9 ENTRIESADDED 0",
		"XDEL s 9-9 8-1 7-1 5-1",
		"XSETID s 9-8 ENTRIESADDED 0",
		"XSETID s 10-0",
		"XLEN s",
		"XADD s 9-9 a 1",
		"XADD s 10-1 a 1",
		"XSETID s -",
		// An empty stream that never lost an entry takes any ID, also a
		// smaller one.
		"XGROUP CREATE e g $ MKSTREAM",
		"XSETID e 6-0",
		"XSETID e 5-0",
		"XSETID e 7-0 ENTRIESADDED 0",
		"XADD e 6-5 a 1",
		"XLEN e",
		"XADD m 1-1 a 1",
		"XADD m 2-1 a 1",
		"XADD m 3-1 a 1",
		"XDEL m 3-1",
		"XSETID m 3-1",
		"XSETID m 3-2",
		"SET str v",
		"XSETID str 1-1",
	))
}

func TestDiffKeyspace(t *testing.T) {
	runDiff(t, script(
		"SET a 1",
		"SET b hello",
		"XADD s 1-1 f v",
		"EXISTS a b s nokey a",
		"TYPE a",
		"TYPE s",
		"TYPE nokey",
		"DBSIZE",
		"KEYS s",
		"KEYS s*",
		"KEYS [s]",
		"KEYS nomatch*",
		"SCAN 0 MATCH s",
		"SCAN 0 TYPE stream",
		"SCAN 0 COUNT 0",
		"SCAN 0 COUNT x",
		"SCAN x",
		"SCAN 0 FOO",
		"GET a",
		"GET s",
		"GET nokey",
		"SET a 2 NX",
		"SET a 2 XX",
		"GET a",
		"SET c 3 XX",
		"SET c 3 NX XX",
		"SET c 3 GET",
		"SET c 4 GET",
		"SET s 4 GET",
		"SET c 5 FOO",
		"SET c 5 EX 0",
		"SET c 5 EX x",
		"OBJECT ENCODING a",
		"OBJECT ENCODING b",
		"OBJECT ENCODING s",
		"OBJECT ENCODING nokey",
		"SET long aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"OBJECT ENCODING long",
		"SET e44 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"OBJECT ENCODING e44",
		"SET n -12345",
		"OBJECT ENCODING n",
		"SET n 0123",
		"OBJECT ENCODING n",
		"RENAME nokey x",
		"RENAME s s2",
		"TYPE s",
		"XRANGE s2 - +",
		"RENAME s2 s2",
		"RENAMENX s2 a",
		"RENAMENX s2 s3",
		"RENAMENX nokey s3",
		"RENAME a s3",
		"TYPE s3",
		"DEL a b s3 nokey",
		"UNLINK c",
		"DBSIZE",
		"FLUSHALL FOO",
		"FLUSHDB",
		"DBSIZE",
		"SET a 1",
		"FLUSHALL SYNC",
		"DBSIZE",
		"MEMORY USAGE nokey",
		"MEMORY USAGE nokey SAMPLES -1",
		"MEMORY USAGE nokey SAMPLES x",
		"MEMORY USAGE nokey FOO",
	))
}

// TestDiffValueEncodings stores values of every listpack encoding (integers
// of each width, short/12-bit/32-bit strings, integer-looking field names)
// and checks XRANGE replies and node splitting by bytes against redis.
func TestDiffValueEncodings(t *testing.T) {
	vals := []string{"0", "127", "128", "-1", "-4096", "4095", "-4097", "32767", "-32768", "32768", "8388607",
		"-8388608", "8388608", "2147483647", "-2147483648", "2147483648", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "007", "-0", "+5", "1e3", " 1", "",
		strings.Repeat("a", 63), strings.Repeat("b", 64), strings.Repeat("c", 4095), strings.Repeat("d", 4096),
		strings.Repeat("e", 70000)}
	var cmds [][]string
	cmds = append(cmds, script("CONFIG SET stream-node-max-bytes 5000", "CONFIG SET stream-node-max-entries 0")...)
	for i, v := range vals {
		cmds = append(cmds, []string{"XADD", "s", fmt.Sprintf("%d-0", i+1), "v", v, strconv.Itoa(i), v})
		cmds = append(cmds, []string{"XADD", "s", fmt.Sprintf("%d-1", i+1), "v", v, strconv.Itoa(i), "x"})
	}
	cmds = append(cmds, script("XRANGE s - +", "XREVRANGE s + - COUNT 7", "XTRIM s MAXLEN ~ 20", "XLEN s",
		"XDEL s 29-0 29-1 30-0", "XRANGE s 25 +", "XTRIM s MINID 29", "XRANGE s - +")...)
	runDiff(t, cmds)
}

// TestDiffTrimOptions covers XADD with trimming options and LIMIT at
// several node sizes.
func TestDiffTrimOptions(t *testing.T) {
	var cmds [][]string
	cmds = append(cmds, script("CONFIG SET stream-node-max-entries 4")...)
	for i := 1; i <= 40; i++ {
		cmds = append(cmds, []string{"XADD", "s", "MAXLEN", "~", "10", "LIMIT", "4", fmt.Sprintf("%d-0", i), "f", strconv.Itoa(i)})
		if i%10 == 0 {
			cmds = append(cmds, []string{"XLEN", "s"}, []string{"XRANGE", "s", "-", "+", "COUNT", "1"})
		}
	}
	for i := 41; i <= 80; i++ {
		cmds = append(cmds, []string{"XADD", "s", "MINID", "~", strconv.Itoa(i - 15), fmt.Sprintf("%d-0", i), "f", strconv.Itoa(i)})
	}
	cmds = append(cmds, script("XLEN s", "XRANGE s - + COUNT 1", "XADD s MINID 79 81-0 f v", "XRANGE s - +",
		"XADD s MAXLEN = 1 82-0 f v", "XRANGE s - +", "XADD s MAXLEN 0 83-0 f v", "XLEN s", "EXISTS s",
		"XADD s MAXLEN ~ 0 LIMIT 0 84-0 f v", "XLEN s")...)
	runDiff(t, cmds)
}

// TestDiffMiscEdges collects smaller edge cases: repeated options, repeated
// keys in XREAD, arity errors, unknown subcommands.
func TestDiffMiscEdges(t *testing.T) {
	runDiff(t, script(
		"XADD s NOMKSTREAM MAXLEN ~ 5 * f v",
		"XADD s 1-1 f v",
		"XADD s 2-1 f v",
		"XADD s 3-1 g w",
		"XRANGE s - + COUNT 1 COUNT 2",
		"XREAD COUNT 0 STREAMS s 0",
		"XREAD STREAMS s s 0 2-1",
		"XREAD STREAMS s $",
		"XREAD COUNT 1 COUNT 2 STREAMS s 0",
		"XREAD BLOCK 0 BLOCK 1 STREAMS s 0",
		"XREAD STREAMS s 18446744073709551615-18446744073709551615",
		"XRANGE s 1 1",
		"XRANGE s 2-1 2-1",
		"XREVRANGE s 2-1 2-1",
		"XRANGE s 0-1 18446744073709551615",
		"XREVRANGE s",
		"XLEN",
		"XLEN s t",
		"TYPE",
		"EXISTS",
		"DEL",
		"GET",
		"SET k",
		"OBJECT ENCODING",
		"OBJECT encoding s extra",
		"OBJECT FOO",
		"MEMORY FOO",
		"MEMORY USAGE",
		"SET k v KEEPTTL",
		"SET k v KEEPTTL EX 10",
		"SET k v EX 10 KEEPTTL",
		"SET k v GET GET",
		"SET k v NX NX",
		"GET k",
		"RENAME k s",
		"TYPE s",
		"XDEL s",
		"XTRIM s MAXLEN",
		"XSETID s",
		"XRANGE s - + COUNT 1 FOO",
	))
}
