package resp

import (
	"bytes"
	"net"
	"runtime"
	"testing"

	"github.com/raftstream/raftstream/engine"
)

// sinkConn is a socket that only counts what is written to it.
type sinkConn struct {
	net.Conn
	written int
}

func (c *sinkConn) Write(p []byte) (int, error) { c.written += len(p); return len(p), nil }
func (c *sinkConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (c *sinkConn) Close() error                { return nil }

// pipelineClient is a connection of s, as accepted, writing into a sink.
func pipelineClient(s *Server) (*client, *sinkConn) {
	sc := &sinkConn{}
	cn := &conn{nc: sc, addr: "127.0.0.1:1"}
	c := newClient(1, cn)
	cn.client = c
	c.user = s.acl.DefaultAuto()
	c.authed = c.user != nil
	return c, sc
}

// serveAndFlush runs a pipeline and writes its replies, as the connection
// loop does.
func serveAndFlush(s *Server, c *client, argvs [][][]byte) {
	s.serve(c.conn, argvs)
	_ = c.conn.flush()
}

// xaddPipeline is n XADDs as redis-benchmark -P n sends them.
func xaddPipeline(n int) [][][]byte {
	argvs := make([][][]byte, n)
	for i := range argvs {
		argvs[i] = [][]byte{[]byte("XADD"), []byte("s"), []byte("*"), []byte("f"), []byte("v")}
	}
	return argvs
}

// TestPipelineAllocs: a pipeline of 16 XADDs costs the server (beyond
// what the backend allocates for the unit it is given) one allocation, the
// unit submitted. It was 6 per command and about 10 per pipeline: the
// command name lower-cased into new strings, the key positions, each reply
// encoded into a new buffer, and the pipeline's slices.
func TestPipelineAllocs(t *testing.T) {
	be := newFakeBackend(1)
	s := New(be, DefaultConfig())
	c, sc := pipelineClient(s)
	argvs := xaddPipeline(16)
	serveAndFlush(s, c, argvs)
	// AllocsPerRun counts the whole process's allocations, so goroutines
	// other tests left running (servers closing, timers) can add to one
	// measurement, never subtract: take the least of three.
	pipeline := testing.AllocsPerRun(500, func() { serveAndFlush(s, c, argvs) })
	for range 2 {
		pipeline = min(pipeline, testing.AllocsPerRun(500, func() { serveAndFlush(s, c, argvs) }))
	}
	if sc.written == 0 {
		t.Fatal("no reply written")
	}
	backend := testing.AllocsPerRun(500, func() {
		unit := make([][][]byte, len(argvs)) // what runPipeline submits
		copy(unit, argvs)
		be.Submit(0, unit)
	})
	t.Logf("%.1f allocations per 16-XADD pipeline, %.1f of them the backend's", pipeline, backend)
	if pipeline-backend > 0.5 {
		t.Fatalf("the server allocates %.1f times per 16-XADD pipeline, want 0 besides the unit", pipeline-backend)
	}
}

func BenchmarkPipelineXAdd16(b *testing.B) {
	s := New(newFakeBackend(1), DefaultConfig())
	c, _ := pipelineClient(s)
	argvs := xaddPipeline(16)
	b.ReportAllocs()
	for b.Loop() {
		serveAndFlush(s, c, argvs)
	}
}

// TestLargeReplyEncodingIsReused: a large reply (a drain's XREADGROUP, ~100
// KB) is encoded into a buffer shared between writes, not into a new one
// grown by doubling per reply, which allocated twice the reply each time.
func TestLargeReplyEncodingIsReused(t *testing.T) {
	be := newFakeBackend(1)
	s := New(be, DefaultConfig())
	c, sc := pipelineClient(s)
	entries := make(engine.Array, 400)
	field := []byte("$5\r\nhello\r\n$5\r\nworld\r\n")
	for i := range entries {
		entries[i] = &engine.EntryReply{ID: engine.ID{Ms: uint64(i + 1)}, N: 2, Enc: bytes.Repeat(field, 10)}
	}
	r := engine.Array{engine.Array{engine.BulkString("s"), entries}}
	write := func() { c.write(r, 2); _ = c.conn.flush() }
	write()
	size := sc.written
	if size < 64<<10 {
		t.Fatalf("reply of %d bytes, want a large one", size)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	const runs = 20
	for range runs {
		write()
	}
	runtime.ReadMemStats(&m1)
	per := float64(m1.TotalAlloc-m0.TotalAlloc) / runs
	t.Logf("%.0f bytes allocated per write of a %d-byte reply", per, size)
	if raceEnabled {
		// sync.Pool keeps only some buffers under -race: the bound is
		// checked by the plain run, the bytes written by both.
		per = 0
	}
	if per > float64(size)/4 {
		t.Fatalf("%.0f bytes allocated per write of a %d-byte reply, want under a quarter of it", per, size)
	}
	if sc.written != (runs+1)*size {
		t.Fatalf("wrote %d bytes, want %d", sc.written, (runs+1)*size)
	}
}
