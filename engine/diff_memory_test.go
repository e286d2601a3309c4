package engine_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// memoryEntry returns the fields of entry i: uniform
// (`customer <8> amount <5> sku <10>`) or with all-different field names.
func memoryEntry(i int, distinct bool) []string {
	c, a, s := "customer", "amount", "sku"
	if distinct {
		c, a, s = c+strconv.Itoa(i), a+strconv.Itoa(i), s+strconv.Itoa(i)
	}
	return []string{c, fmt.Sprintf("c%07d", i%10000000), a, fmt.Sprintf("%05d", 10000+i%90000), s, fmt.Sprintf("SKU-%06d", i%1000000)}
}

// fillBoth adds n entries to stream s on redis (pipelined) and the engine.
func fillBoth(tb testing.TB, c *testkit.Conn, e *engine.Engine, n int, distinct bool) {
	const batch = 1000
	for i := 0; i < n; i += batch {
		m := min(batch, n-i)
		for j := i; j < i+m; j++ {
			args := append([]string{"XADD", "s", strconv.Itoa(j+1) + "-0"}, memoryEntry(j, distinct)...)
			if err := c.Send(args...); err != nil {
				tb.Fatal(err)
			}
			argv := make([][]byte, len(args))
			for k := range args {
				argv[k] = []byte(args[k])
			}
			e.Exec(1, argv)
		}
		for j := 0; j < m; j++ {
			if r, err := c.ReadReply(); err != nil || r[0] != '$' {
				tb.Fatalf("XADD: %q %v", r, err)
			}
		}
	}
}

func memoryUsage(tb testing.TB, c *testkit.Conn, e *engine.Engine) (redis, ours int64) {
	r, err := c.Do("MEMORY", "USAGE", "s", "SAMPLES", "0")
	if err != nil || r[0] != ':' {
		tb.Fatalf("redis MEMORY USAGE: %q %v", r, err)
	}
	redis, _ = strconv.ParseInt(strings.TrimSpace(string(r[1:])), 10, 64)
	got := e.Exec(1, [][]byte{[]byte("MEMORY"), []byte("USAGE"), []byte("s"), []byte("SAMPLES"), []byte("0")})
	return redis, int64(got.(engine.Integer))
}

// BenchmarkRedisMemoryRatio fills redis-server and the engine with the same
// 1M entries and reports both MEMORY USAGE figures per entry and their
// ratio (engine / redis). Run with -bench RedisMemoryRatio -benchtime 1x.
func BenchmarkRedisMemoryRatio(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		name := "uniform"
		if distinct {
			name = "distinct"
		}
		b.Run(name, func(b *testing.B) {
			addr := testkit.StartRedis(b)
			for i := 0; i < b.N; i++ {
				c, err := testkit.Dial(addr)
				if err != nil {
					b.Fatal(err)
				}
				c.Do("FLUSHALL")
				const n = 1_000_000
				e := engine.New(engine.DefaultConfig())
				fillBoth(b, c, e, n, distinct)
				rm, em := memoryUsage(b, c, e)
				b.ReportMetric(float64(rm)/n, "redis-bytes/entry")
				b.ReportMetric(float64(em)/n, "engine-bytes/entry")
				b.ReportMetric(float64(em)/float64(rm), "ratio")
				c.Close()
			}
		})
	}
}

// TestMemoryUsageTracksRedis checks, on a small stream, that the engine's
// MEMORY USAGE is real accounting in the same range as redis-server's
// (listpack bytes are identical; only allocator and struct overheads
// differ), and that it grows with the data.
func TestMemoryUsageTracksRedis(t *testing.T) {
	addr := newDiffRedis(t)
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := engine.New(engine.DefaultConfig())
	fillBoth(t, c, e, 20_000, false)
	rm, em := memoryUsage(t, c, e)
	t.Logf("20k uniform entries: redis %d bytes, engine %d bytes (ratio %.2f)", rm, em, float64(em)/float64(rm))
	if em < rm/2 || em > rm*2 {
		t.Fatalf("engine MEMORY USAGE %d far from redis %d", em, rm)
	}
}
