package engine

import (
	"fmt"
	"testing"
)

// BenchmarkGroupReadAck measures the consumer-group hot path: XREADGROUP
// COUNT 100 of new entries followed by XACK of the 100 IDs, reporting
// entries/s (delivered and acknowledged).
func BenchmarkGroupReadAck(b *testing.B) {
	e := New(DefaultConfig())
	next := uint64(1)
	fill := func(n int) {
		for i := 0; i < n; i++ {
			testAdd(e, "s", ID{next, 0}, "field", "value-0123456789")
			next++
		}
	}
	fill(100_000)
	run(e, 1, "XGROUP CREATE s g 0")
	read := [][]byte{[]byte("XREADGROUP"), []byte("GROUP"), []byte("g"), []byte("c"), []byte("COUNT"),
		[]byte("100"), []byte("STREAMS"), []byte("s"), []byte(">")}
	ack := make([][]byte, 3, 103)
	ack[0], ack[1], ack[2] = []byte("XACK"), []byte("s"), []byte("g")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, ok := e.Exec(int64(i), read).(PairMap)
		if !ok {
			b.StopTimer()
			fill(100_000)
			b.StartTimer()
			r = e.Exec(int64(i), read).(PairMap)
		}
		ack = ack[:3]
		for _, ent := range r[1].(Array) {
			ack = append(ack, ent.(Array)[0].(BulkString))
		}
		if n := e.Exec(int64(i), ack).(Integer); n != 100 {
			b.Fatalf("acked %d", n)
		}
	}
	b.ReportMetric(float64(b.N)*100/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkGroupAckOldest measures XACK of the oldest pending entry with
// 200k entries pending (the PEL must not shift all entries per delete).
func BenchmarkGroupAckOldest(b *testing.B) {
	e := New(DefaultConfig())
	const n = 200_000
	for i := 1; i <= n+b.N; i++ {
		testAdd(e, "s", ID{uint64(i), 0}, "f", "v")
	}
	run(e, 1, "XGROUP CREATE s g 0")
	run(e, 1, fmt.Sprintf("XREADGROUP GROUP g c COUNT %d STREAMS s >", n+b.N))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(1, [][]byte{[]byte("XACK"), []byte("s"), []byte("g"), ID{uint64(i + 1), 0}.Append(nil)})
	}
}
