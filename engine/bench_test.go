package engine

import (
	"fmt"
	"strconv"
	"testing"
)

// Benchmarks of the stream storage. Bytes per entry come from MEMORY USAGE
// (SAMPLES 0: every node measured); the comparison with redis-server's own
// MEMORY USAGE is BenchmarkRedisMemoryRatio (diff_memory_test.go).

// uniformEntry is `customer <8 chars> amount <5 chars> sku <10 chars>`.
func uniformEntry(i int) [][]byte {
	return [][]byte{[]byte("customer"), []byte(fmt.Sprintf("c%07d", i%10000000)),
		[]byte("amount"), []byte(fmt.Sprintf("%05d", 10000+i%90000)),
		[]byte("sku"), []byte(fmt.Sprintf("SKU-%06d", i%1000000))}
}

// distinctEntry has three field names never seen before.
func distinctEntry(i int) [][]byte {
	return [][]byte{[]byte(fmt.Sprintf("customer%d", i)), []byte(fmt.Sprintf("c%07d", i%10000000)),
		[]byte(fmt.Sprintf("amount%d", i)), []byte(fmt.Sprintf("%05d", 10000+i%90000)),
		[]byte(fmt.Sprintf("sku%d", i)), []byte(fmt.Sprintf("SKU-%06d", i%1000000))}
}

func BenchmarkXAdd(b *testing.B) {
	e := New(DefaultConfig())
	argv := append([][]byte{[]byte("XADD"), []byte("s"), []byte("*")}, uniformEntry(7)...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(1_700_000_000_000+int64(i/10), argv)
	}
}

// BenchmarkXAddStorage measures the storage alone (no parsing, no reply):
// it must be allocation-free when amortised.
func BenchmarkXAddStorage(b *testing.B) {
	s := NewStream()
	cfg := DefaultConfig()
	f := uniformEntry(7)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.appendEntry(cfg, ID{uint64(i + 1), 0}, f)
	}
}

func fillStream(e *Engine, n int, gen func(int) [][]byte) {
	for i := 0; i < n; i++ {
		argv := append([][]byte{[]byte("XADD"), []byte("s"), []byte(strconv.Itoa(i+1) + "-0")}, gen(i)...)
		e.Exec(1, argv)
	}
}

func BenchmarkXRange(b *testing.B) {
	const n = 100_000
	e := New(DefaultConfig())
	fillStream(e, n, uniformEntry)
	b.ReportAllocs()
	b.ResetTimer()
	entries := 0
	for i := 0; i < b.N; i++ {
		start := strconv.Itoa(1 + (i*7919)%(n-1000))
		r := e.Exec(1, [][]byte{[]byte("XRANGE"), []byte("s"), []byte(start), []byte("+"), []byte("COUNT"), []byte("1000")})
		entries += len(r.(Array))
	}
	b.ReportMetric(float64(entries)/b.Elapsed().Seconds(), "entries/s")
}

func benchBytesPerEntry(b *testing.B, gen func(int) [][]byte) {
	const n = 1_000_000
	for i := 0; i < b.N; i++ {
		e := New(DefaultConfig())
		fillStream(e, n, gen)
		r := e.Exec(1, [][]byte{[]byte("MEMORY"), []byte("USAGE"), []byte("s"), []byte("SAMPLES"), []byte("0")})
		b.ReportMetric(float64(r.(Integer))/n, "bytes/entry")
	}
}

func BenchmarkBytesPerEntryUniform(b *testing.B)  { benchBytesPerEntry(b, uniformEntry) }
func BenchmarkBytesPerEntryDistinct(b *testing.B) { benchBytesPerEntry(b, distinctEntry) }
