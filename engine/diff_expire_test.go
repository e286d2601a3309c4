package engine_test

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// The expiry commands against redis-server 7.0, in RESP2 and RESP3. Unlike
// the other differential scripts, the engine runs each command at the wall
// clock (as a replica would), so that Redis's and the engine's times agree
// to within the test's own latency:
//   - "@s+N" / "@ms+N" (or -N) in an argument is now in seconds / ms plus N;
//   - {"sleep", ms} waits on both sides;
//   - replies of TTL, PTTL, EXPIRETIME and PEXPIRETIME are compared within
//     a second (1 for the second forms, 1000 for the ms ones);
//   - SCAN and KEYS replies are compared as sets.

// expireDiff runs cmds against redis at addr and a fresh engine.
func expireDiff(t *testing.T, addr string, cmds [][]string) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		d := newDiffSession(t, addr, proto)
		for i, raw := range cmds {
			if raw[0] == "sleep" {
				ms, _ := strconv.Atoi(raw[1])
				time.Sleep(time.Duration(ms) * time.Millisecond)
				continue
			}
			now := time.Now()
			cmd := make([]string, len(raw))
			for j, a := range raw {
				cmd[j] = testkit.ExpandTime(a, now)
			}
			d.now = now.UnixMilli()
			want, got, _ := d.do(cmd)
			if !expireRepliesMatch(t, cmd, want, got) {
				t.Fatalf("RESP%d step %d %q:\nredis:  %q\nengine: %q", proto, i, cmd, want, got)
			}
		}
	}
}

func expireRepliesMatch(t *testing.T, cmd []string, want, got []byte) bool {
	if bytes.Equal(want, got) {
		return true
	}
	switch strings.ToUpper(cmd[0]) {
	case "TTL", "EXPIRETIME", "PTTL", "PEXPIRETIME":
		tol := int64(1)
		if strings.HasPrefix(strings.ToUpper(cmd[0]), "P") {
			tol = 1000
		}
		w, err1 := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(string(want), ":")), 10, 64)
		g, err2 := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(string(got), ":")), 10, 64)
		if err1 != nil || err2 != nil || (w < 0) != (g < 0) || (w < 0 && w != g) {
			return false
		}
		return w-g <= tol && g-w <= tol
	case "KEYS":
		_, w := bulkList(t, want, false)
		_, g := bulkList(t, got, false)
		return slices.Equal(w, g)
	case "SCAN":
		cw, w := bulkList(t, want, true)
		cg, g := bulkList(t, got, true)
		return cw == "0" && cg == "0" && slices.Equal(w, g)
	}
	return false
}

func TestDiffExpire(t *testing.T) {
	addr := newDiffRedis(t)
	expireDiff(t, addr, script(
		// EXPIRE and PEXPIRE: missing keys, set, read back, errors
		"EXPIRE nokey 100",
		"PEXPIRE nokey 100",
		"SET k v",
		"TTL k",
		"PTTL k",
		"EXPIRETIME k",
		"PEXPIRETIME k",
		"EXPIRE k 100",
		"TTL k",
		"PTTL k",
		"EXPIRETIME k",
		"PEXPIRETIME k",
		"PEXPIRE k 123456",
		"PTTL k",
		"TTL k",
		"EXPIRE k abc",
		"EXPIRE k 1.5",
		"EXPIRE k 100 FOO",
		"EXPIRE k abc FOO",
		"EXPIRE k abc NX XX",
		"EXPIRE k 100 NX XX",
		"EXPIRE k 100 NX GT",
		"EXPIRE k 100 NX LT",
		"EXPIRE k 100 GT LT",
		"EXPIRE k 100 nx nx",
		"EXPIRE k 9223372036854775807",
		"EXPIRE k -9223372036854775808",
		"EXPIRE k 9223372036854775",
		"PEXPIRE k 9223372036854775807",
		"EXPIREAT k 9223372036854775807",
		"EXPIREAT k 9223372036854775",
		"EXPIRETIME k",
		"PEXPIREAT k 9223372036854775807",
		"PEXPIRETIME k",
		"EXPIRE k",
		"EXPIRE",
		"TTL",
		"TTL k extra",
		"PTTL",
		"EXPIRETIME",
		"PEXPIRETIME a b",
		"PERSIST",
		"PERSIST a b",
		// NX XX GT LT
		"SET f v",
		"EXPIRE f 100 XX",
		"EXPIRE f 100 GT",
		"EXPIRE f 100 LT",
		"TTL f",
		"PERSIST f",
		"EXPIRE f 100 NX",
		"EXPIRE f 200 NX",
		"EXPIRE f 50 XX",
		"TTL f",
		"EXPIRE f 40 GT",
		"EXPIRE f 60 GT",
		"TTL f",
		"EXPIRE f 70 LT",
		"EXPIRE f 30 LT",
		"TTL f",
		"EXPIRE f 20 XX GT",
		"EXPIRE f 40 XX GT",
		"EXPIRE f 20 xx lt",
		"TTL f",
		// equal times: neither greater nor less
		"PEXPIREAT f 4000000000000",
		"PEXPIREAT f 4000000000000 GT",
		"PEXPIREAT f 4000000000000 LT",
		"EXPIREAT f 4000000000 GT",
		"PEXPIREAT f 4000000000001 GT",
		"PEXPIREAT f 4000000000000 LT",
		"PEXPIRETIME f",
		"EXPIREAT f @s+500",
		"TTL f",
		"EXPIREAT f @s+400 GT",
		"PEXPIREAT f @ms+600000 GT",
		"TTL f",
		"PEXPIREAT f @ms+300000 LT",
		"PTTL f",
		// a time in the past deletes the key and replies 1
		"EXPIRE f -1",
		"EXISTS f",
		"TTL f",
		"SET f v",
		"EXPIRE f 0",
		"EXISTS f",
		"SET f v",
		"EXPIREAT f @s-10",
		"GET f",
		"SET f v",
		"PEXPIREAT f 1",
		"TYPE f",
		"SET f v",
		"PEXPIRE f -100 LT",
		"EXISTS f",
		"SET f v",
		"EXPIRE f -1 GT",
		"EXISTS f",
		"EXPIRE f -1 NX",
		// PERSIST
		"PERSIST nokey",
		"SET p v",
		"PERSIST p",
		"EXPIRE p 100",
		"PERSIST p",
		"TTL p",
		"PERSIST p",
		// streams carry expiries too; stream writes keep them
		"XADD s 1-1 a 1",
		"EXPIRE s 100",
		"TTL s",
		"XADD s 2-1 b 2",
		"TTL s",
		"XTRIM s MAXLEN 1",
		"TTL s",
		"XGROUP CREATE s g 0",
		"XREADGROUP GROUP g c STREAMS s >",
		"XACK s g 2-1",
		"XDEL s 2-1",
		"TTL s",
		"EXPIRETIME s",
		"PERSIST s",
		"TTL s",
		// RENAME moves the expiry, and replaces the destination's
		"SET r1 v EX 100",
		"SET r2 v EX 500",
		"RENAME r1 r2",
		"TTL r2",
		"TTL r1",
		"SET r3 v",
		"RENAME r2 r3",
		"TTL r3",
		"SET r4 v EX 300",
		"RENAMENX r3 r4",
		"RENAMENX r3 r5",
		"TTL r5",
		// SET clears an expiry unless KEEPTTL; DEL, UNLINK clear it
		"SET c v EX 100",
		"SET c v2",
		"TTL c",
		"SET c v EX 100",
		"SET c v3 KEEPTTL",
		"TTL c",
		"GET c",
		"DEL c",
		"SET c v",
		"TTL c",
		"SET c v PX 100000",
		"UNLINK c",
		"SET c v",
		"TTL c",
		// keys that expire are gone for every command
		"SET e v PX 50",
		"XADD es 5-1 f v",
		"PEXPIRE es 50",
		"SET keep v",
		"sleep 120",
		"GET e",
		"EXISTS e es",
		"TYPE e",
		"TYPE es",
		"TTL e",
		"PTTL es",
		"EXPIRETIME es",
		"XLEN es",
		"XRANGE es - +",
		"XINFO STREAM es",
		"OBJECT ENCODING e",
		"PERSIST e",
		"EXPIRE e 100",
		"DEL e",
		"RENAME es x",
		"KEYS e*",
		"XADD es 1-1 f v",
		"XRANGE es - +",
		"TTL es",
		"XGROUP CREATE es2 g $",
		"SET es2 v PX 50",
		"sleep 80",
		"XGROUP CREATE es2 g $ MKSTREAM",
		"TYPE es2",
		"SET e2 v PX 50",
		"sleep 80",
		"SET e2 v NX",
		"GET e2",
		"SET e3 v PX 50",
		"sleep 80",
		"SET e3 w XX",
		"GET e3",
	))
}

func TestDiffSetAndGetEx(t *testing.T) {
	addr := newDiffRedis(t)
	expireDiff(t, addr, script(
		// SET's expiry options
		"SET a v EX 100",
		"TTL a",
		"SET a v PX 100000",
		"PTTL a",
		"SET a v EXAT @s+200",
		"TTL a",
		"SET a v PXAT @ms+300000",
		"PTTL a",
		"SET a v ex 100 ex 200",
		"TTL a",
		"SET a v PX 100 PX 200000",
		"PTTL a",
		"SET a v EX 10 PX 100",
		"SET a v PX 10 EX 100",
		"SET a v EXAT 10 PXAT 100",
		"SET a v EX 10 KEEPTTL",
		"SET a v KEEPTTL EX 10",
		"SET a v KEEPTTL KEEPTTL",
		"SET a v EX",
		"SET a v EX 0",
		"SET a v EX -5",
		"SET a v PX 0",
		"SET a v EXAT 0",
		"SET a v PXAT -1",
		"SET a v EX abc",
		"SET a v EX 1.5",
		"SET a v EX 9223372036854776",
		"SET a v EX 9223372036854775",
		"SET a v PX 9223372036854775807",
		"SET a v EXAT 9223372036854775",
		"TTL a",
		"SET a v PXAT 9223372036854775807",
		"PEXPIRETIME a",
		"SET a v PERSIST",
		"SET a v EX 10 NX XX",
		// set in the past: OK, and the key is gone
		"SET a v EXAT 1",
		"EXISTS a",
		"SET a v PXAT @ms-1000 GET",
		"SET a v GET PXAT @ms-1000",
		"EXISTS a",
		// NX / XX / GET interplay
		"SET b v1 NX EX 100",
		"SET b v2 NX EX 100",
		"GET b",
		"SET b v3 XX",
		"TTL b",
		"SET nob v XX EX 100",
		"EXISTS nob",
		"SET b v4 GET EX 100",
		"TTL b",
		"SET b v5 NX GET",
		"SET b v6 XX GET KEEPTTL",
		"TTL b",
		"SET nob2 v NX GET PX 100000",
		"PTTL nob2",
		"SET nob3 v XX GET",
		"EXISTS nob3",
		"XADD st 1-1 f v",
		"SET st v GET",
		"SET st v GET EX abc",
		"SET st v GET EX 0",
		"SET st v NX GET",
		"TYPE st",
		"SET st v EX 100",
		"TYPE st",
		"TTL st",
		// GETEX
		"GETEX",
		"GETEX nokey",
		"GETEX nokey EX abc",
		"GETEX nokey EX",
		"GETEX nokey FOO",
		"SET g v",
		"GETEX g",
		"TTL g",
		"GETEX g EX 100",
		"TTL g",
		"GETEX g PX 200000",
		"PTTL g",
		"GETEX g EXAT @s+300",
		"TTL g",
		"GETEX g PXAT @ms+400000",
		"PTTL g",
		"GETEX g PERSIST",
		"TTL g",
		"GETEX g PERSIST PERSIST",
		"GETEX g EX 10 EX 20",
		"TTL g",
		"GETEX g EX abc",
		"GETEX g EX 0",
		"GETEX g PX -1",
		"GETEX g EX 9223372036854776",
		"GETEX g PX 9223372036854775807",
		"GETEX g EX 10 PERSIST",
		"GETEX g PERSIST EX 10",
		"GETEX g EX 10 PX 10",
		"GETEX g NX",
		"GETEX g KEEPTTL",
		"GETEX g GET",
		"GETEX g EX",
		"GETEX st",
		"GETEX st EX 10",
		"XADD st2 1-1 f v",
		"GETEX st2 EX abc",
		"GETEX g EXAT @s-10",
		"EXISTS g",
		"SET g v",
		"GETEX g PXAT 1",
		"EXISTS g",
		"SET g v",
		"GETEX g ex 100",
		"GETEX g exat 1",
		"GET g",
	))
}

// TestDiffScanType: SCAN's TYPE filter (and MATCH/COUNT with it) and KEYS,
// with keys of both types, some with expiries, some expired.
func TestDiffScanType(t *testing.T) {
	addr := newDiffRedis(t)
	var cmds [][]string
	for i := 0; i < 30; i++ {
		k := "k:" + strconv.Itoa(i)
		if i%2 == 0 {
			cmds = append(cmds, []string{"XADD", k, "1-1", "f", "v"})
		} else {
			cmds = append(cmds, []string{"SET", k, "v"})
		}
		switch i % 5 {
		case 1:
			cmds = append(cmds, []string{"EXPIRE", k, "1000"})
		case 2:
			cmds = append(cmds, []string{"PEXPIRE", k, "50"})
		}
	}
	cmds = append(cmds, script(
		"sleep 120",
		// (not DBSIZE: Redis counts expired keys until its cycle samples
		// them; the engine never does, TestKeyspaceCountsAreExact)
		"KEYS *",
		"KEYS k:1*",
		"SCAN 0 COUNT 1000",
		"SCAN 0 TYPE stream COUNT 1000",
		"SCAN 0 TYPE string COUNT 1000",
		"SCAN 0 TYPE STREAM MATCH k:1* COUNT 1000",
		"SCAN 0 MATCH k:2* TYPE string COUNT 1000",
		"SCAN 0 TYPE hash COUNT 1000",
		"SCAN 0 TYPE",
		"SCAN 0 TYPE stream COUNT",
		"SCAN 0 TYPE stream COUNT 0",
		"SCAN x TYPE stream",
	)...)
	expireDiff(t, addr, cmds)
}
