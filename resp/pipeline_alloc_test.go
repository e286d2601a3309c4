package resp

import (
	"net"
	"testing"

	"github.com/tidwall/redcon"
)

// sinkConn is a redcon connection that only counts what is written to it.
type sinkConn struct {
	redcon.Conn
	written int
}

func (c *sinkConn) RemoteAddr() string   { return "127.0.0.1:1" }
func (c *sinkConn) NetConn() net.Conn    { return nil }
func (c *sinkConn) WriteRaw(data []byte) { c.written += len(data) }
func (c *sinkConn) Close() error         { return nil }

// pipelineClient is a connection of s, as accepted, writing into a sink.
func pipelineClient(s *Server) (*client, *sinkConn) {
	sc := &sinkConn{}
	c := newClient(1, sc)
	c.user = s.acl.defaultAuto()
	c.authed = c.user != nil
	return c, sc
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
	s.runPipeline(c, argvs)
	// AllocsPerRun counts the whole process's allocations, so goroutines
	// other tests left running (servers closing, timers) can add to one
	// measurement, never subtract: take the least of three.
	pipeline := testing.AllocsPerRun(500, func() { s.runPipeline(c, argvs) })
	for range 2 {
		pipeline = min(pipeline, testing.AllocsPerRun(500, func() { s.runPipeline(c, argvs) }))
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
		s.runPipeline(c, argvs)
	}
}
