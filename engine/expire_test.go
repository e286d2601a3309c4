package engine

import (
	"bytes"
	"math/big"
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// checkExpireIndex holds the index to its invariant (exactly the keys with
// an expiry, with their expiry; sizes and sums right) and Keyspace to a
// brute-force count at now.
func checkExpireIndex(t *testing.T, e *Engine, now int64) {
	t.Helper()
	type ent struct {
		at  int64
		key string
	}
	var want, got []ent
	for k, v := range e.keys {
		if v.expireAt != 0 {
			want = append(want, ent{v.expireAt, k})
		}
	}
	slices.SortFunc(want, func(a, b ent) int {
		if xless(a.at, a.key, b.at, b.key) {
			return -1
		}
		return 1
	})
	e.expires.ascend(func(at int64, key string) bool { got = append(got, ent{at, key}); return true })
	if !slices.Equal(want, got) {
		t.Fatalf("index %v, keyspace %v", got, want)
	}
	var walk func(n *xnode) (int, *big.Int)
	walk = func(n *xnode) (int, *big.Int) {
		if n == nil {
			return 0, new(big.Int)
		}
		if n.left != nil && n.left.prio > n.prio || n.right != nil && n.right.prio > n.prio {
			t.Fatal("heap order broken")
		}
		ls, lsum := walk(n.left)
		rs, rsum := walk(n.right)
		sum := new(big.Int).Add(lsum, rsum)
		sum.Add(sum, big.NewInt(n.at))
		hl := new(big.Int).Lsh(new(big.Int).SetUint64(n.sumHi), 64)
		hl.Add(hl, new(big.Int).SetUint64(n.sumLo))
		if n.size != ls+rs+1 || hl.Cmp(sum) != 0 {
			t.Fatalf("node %q: size %d sum %v, want %d %v", n.key, n.size, hl, ls+rs+1, sum)
		}
		return n.size, sum
	}
	walk(e.expires.root)
	var keys, expires int64
	ahead := new(big.Int)
	for _, v := range e.keys {
		if v.expireAt != 0 && v.expireAt <= now {
			continue
		}
		keys++
		if v.expireAt != 0 {
			expires++
			ahead.Add(ahead, big.NewInt(v.expireAt-now))
		}
	}
	var avg int64
	if expires > 0 {
		avg = ahead.Div(ahead, big.NewInt(expires)).Int64()
	}
	if ks := e.Keyspace(now); ks != (KeyspaceInfo{keys, expires, avg}) {
		t.Fatalf("Keyspace(%d) = %+v, want keys %d expires %d avg_ttl %d", now, ks, keys, expires, avg)
	}
	if r := execS(e, now, "DBSIZE"); r != Integer(keys) {
		t.Fatalf("DBSIZE %v, want %d", r, keys)
	}
}

// TestExpireIndexMatchesKeyspace runs random keyspace commands at a clock
// that moves forward and checks the index and the counts after each.
func TestExpireIndexMatchesKeyspace(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		e := New(DefaultConfig())
		now := int64(1_000_000)
		keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		for i := 0; i < 3000; i++ {
			now += int64(rnd.Intn(40))
			k, k2 := keys[rnd.Intn(len(keys))], keys[rnd.Intn(len(keys))]
			ms := strconv.Itoa(rnd.Intn(400) - 50)
			var cmd []string
			switch rnd.Intn(13) {
			case 0:
				cmd = []string{"SET", k, "v"}
			case 1:
				cmd = []string{"SET", k, "v", "PX", strconv.Itoa(1 + rnd.Intn(300))}
			case 2:
				cmd = []string{"SET", k, "v", "KEEPTTL"}
			case 3:
				cmd = []string{"PEXPIRE", k, ms}
			case 4:
				cmd = []string{"PEXPIRE", k, ms, []string{"NX", "XX", "GT", "LT"}[rnd.Intn(4)]}
			case 5:
				cmd = []string{"PERSIST", k}
			case 6:
				cmd = []string{"DEL", k}
			case 7:
				cmd = []string{"RENAME", k, k2}
			case 8:
				cmd = []string{"XADD", k, "*", "f", "v"}
			case 9:
				cmd = []string{"GETEX", k, "PX", strconv.Itoa(1 + rnd.Intn(300))}
			case 10:
				if argv := e.ExpireCycle(now, 1+rnd.Intn(3)); argv != nil {
					if r := e.Exec(now, argv); r == Integer(0) {
						t.Fatalf("cycle %q deleted nothing", argv)
					}
				}
				continue
			case 11:
				cmd = []string{"PEXPIREAT", k, strconv.FormatInt(now+int64(rnd.Intn(300)-20), 10)}
			case 12:
				if rnd.Intn(20) == 0 {
					cmd = []string{"FLUSHALL"}
				} else {
					cmd = []string{"GETEX", k, "PERSIST"}
				}
			}
			execS(e, now, cmd...)
			checkExpireIndex(t, e, now)
			checkExpireIndex(t, e, now+int64(rnd.Intn(200)))
		}
	}
}

// TestExpiredKeyIsAbsentToEveryCommand: a key past its expiry but still in
// the map answers as a missing key, and writes replace it.
func TestExpiredKeyIsAbsentToEveryCommand(t *testing.T) {
	e := New(DefaultConfig())
	execS(e, 100, "XADD", "s", "5-1", "f", "v")
	execS(e, 100, "XGROUP", "CREATE", "s", "g", "0")
	execS(e, 100, "PEXPIRE", "s", "10")
	execS(e, 100, "SET", "str", "v", "PX", "10")
	now := int64(110)
	if e.keys["s"] == nil || e.keys["str"] == nil {
		t.Fatal("expired keys are removed only by a log entry")
	}
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"EXISTS", "s", "str"}, "0"},
		{[]string{"TYPE", "s"}, "none"},
		{[]string{"GET", "str"}, "{}"},
		{[]string{"XLEN", "s"}, "0"},
		{[]string{"XRANGE", "s", "-", "+"}, "[]"},
		{[]string{"XREAD", "STREAMS", "s", "0"}, "{}"},
		{[]string{"XINFO", "STREAM", "s"}, "ERR(ERR no such key)"},
		{[]string{"XPENDING", "s", "g"}, "ERR(NOGROUP No such key 's' or consumer group 'g')"},
		{[]string{"MEMORY", "USAGE", "s"}, "{}"},
		{[]string{"OBJECT", "ENCODING", "str"}, "{}"},
		{[]string{"KEYS", "*"}, "[]"},
		{[]string{"DBSIZE"}, "0"},
		{[]string{"TTL", "s"}, "-2"},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, "ERR(NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option)"},
		{[]string{"XGROUP", "CREATE", "s", "g", "0"}, "ERR(ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.)"},
		{[]string{"XADD", "s", "1-1", "f", "v"}, `"1-1"`},
		{[]string{"XINFO", "STREAM", "s"}, ""},
		{[]string{"TTL", "s"}, "-1"},
	} {
		got := replyText(execS(e, now, c.cmd...))
		if c.want != "" && got != c.want {
			t.Errorf("%v = %s, want %s", c.cmd, got, c.want)
		}
	}
	if got := e.LastID(now, []byte("s")); got != (ID{1, 1}) {
		t.Errorf("LastID %v", got)
	}
	if s := e.keys["s"].Stream; s.EntriesAdded != 1 || len(s.Groups) != 0 {
		t.Errorf("XADD on an expired stream kept the old one: entries-added %d, %d groups", s.EntriesAdded, len(s.Groups))
	}
}

// TestExpireCycleNamesTheExpiryItSaw: the cycle's command deletes only keys
// still holding the expiry it named, only once that expiry has passed, and
// replaying it changes nothing.
func TestExpireCycleNamesTheExpiryItSaw(t *testing.T) {
	e := New(DefaultConfig())
	for i, k := range []string{"a", "b", "c", "d"} {
		execS(e, 0, "SET", k, "v", "PXAT", strconv.Itoa(100+i))
	}
	execS(e, 0, "SET", "later", "v", "PXAT", "1000")
	if argv := e.ExpireCycle(99, 10); argv != nil {
		t.Fatalf("nothing expired yet, got %q", argv)
	}
	argv := e.ExpireCycle(102, 2)
	if want := "raftstream.expired a 100 b 101"; string(bytes.Join(argv, []byte(" "))) != want {
		t.Fatalf("cycle %q, want %q", argv, want)
	}
	all := e.ExpireCycle(200, 100)
	// Meanwhile "a" is re-created without an expiry and "c" with another.
	execS(e, 150, "SET", "a", "v2")
	execS(e, 150, "SET", "c", "v2", "PXAT", "5000")
	if r := e.Exec(99, all); r != Integer(0) {
		t.Fatalf("applied before the expiries (entry time 99): %v", r)
	}
	if r := e.Exec(200, all); r != Integer(2) { // b and d
		t.Fatalf("deleted %v, want 2", r)
	}
	if r := e.Exec(200, all); r != Integer(0) {
		t.Fatalf("replay deleted %v", r)
	}
	if got := replyText(execS(e, 200, "KEYS", "*")); got != `["a" "c" "later"]` {
		t.Fatalf("keys %s", got)
	}
	checkExpireIndex(t, e, 200)
	for _, bad := range [][]string{{expiredCmd}, {expiredCmd, "a"}, {expiredCmd, "a", "x"}, {expiredCmd, "a", "0"}, {expiredCmd, "a", "1", "b"}} {
		if Validate(0, toArgv(bad)) == nil {
			t.Errorf("%q validates", bad)
		}
	}
}

func toArgv(args []string) [][]byte {
	argv := make([][]byte, len(args))
	for i := range args {
		argv[i] = []byte(args[i])
	}
	return argv
}

// TestReadTimeNeverBeforeTheLog: a replica whose wall clock lags the log's
// time reads at the log's time.
func TestReadTimeNeverBeforeTheLog(t *testing.T) {
	e := New(DefaultConfig())
	e.Advance(500)
	e.Advance(400) // time never runs backwards
	if got := e.ReadTime(450); got != 500 {
		t.Fatalf("ReadTime(450) = %d", got)
	}
	if got := e.ReadTime(600); got != 600 {
		t.Fatalf("ReadTime(600) = %d", got)
	}
}

// TestExpiryValidation: the leader rejects what Exec would certainly
// reject, and nothing that depends on the time.
func TestExpiryValidation(t *testing.T) {
	for _, c := range []struct {
		cmd []string
		err string
	}{
		{[]string{"EXPIRE", "k", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"EXPIRE", "k", "1", "FOO"}, "ERR Unsupported option FOO"},
		{[]string{"PEXPIRE", "k", "1", "NX", "GT"}, "ERR NX and XX, GT or LT options at the same time are not compatible"},
		{[]string{"EXPIREAT", "k", "9223372036854775807"}, "ERR invalid expire time in 'expireat' command"},
		{[]string{"PEXPIRE", "k", "9223372036854775807"}, ""}, // overflows only once now is added
		{[]string{"SET", "k", "v", "EX", "0"}, "ERR invalid expire time in 'set' command"},
		{[]string{"SET", "k", "v", "PX", "9223372036854775807"}, ""},
		{[]string{"SET", "k", "v", "EX", "1", "PX", "1"}, "ERR syntax error"},
		{[]string{"GETEX", "k", "EX", "0"}, ""}, // checked only if the key exists
		{[]string{"GETEX", "k", "NX"}, "ERR syntax error"},
		{[]string{"PERSIST", "k", "x"}, "ERR wrong number of arguments for 'persist' command"},
	} {
		got := ""
		if err := Validate(1000, toArgv(c.cmd)); err != nil {
			got = err.Msg
		}
		if got != c.err {
			t.Errorf("Validate %q = %q, want %q", c.cmd, got, c.err)
		}
	}
}
