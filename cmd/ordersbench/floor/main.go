// Command floor is a minimal durable XADD server for one question: how much
// of a node's CPU per XADD at redis-benchmark -P 1 comes from the way the
// connections are served, whatever is done with the commands?
//
// It answers every RESP command with a new stream-ID-like bulk string once
// the command's bytes are written to a zero-filled log file and
// fdatasync'ed: one write and one fdatasync per batch of whatever commands
// arrived meanwhile (group commit). No Raft, no engine, no command table.
// Three ways of serving the connections (-model):
//
//	goroutine  a goroutine per connection reads, queues its commands for the
//	           log writer, waits for them to be durable and writes the
//	           replies (raftstream's model, and Go's usual one);
//	burst      a goroutine per connection reads and queues; the log writer
//	           writes every reply of a batch itself, right after the
//	           fdatasync, with no goroutine wake-up per reply;
//	eventloop  one goroutine waits in epoll_wait for every connection, reads
//	           all that are ready, writes and fdatasyncs once, then writes
//	           every reply (redis-server's model; Linux only).
//
// floor-bench.sh runs it next to redis-server and raftstream. It is a
// measuring tool, not a server: it keeps nothing and checks little.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6390", "listen address")
	path := flag.String("file", "floor.log", "log file (overwritten)")
	model := flag.String("model", "goroutine", "goroutine, burst or eventloop")
	flag.Parse()
	lg, err := openLog(*path)
	if err == nil {
		err = serve(*addr, *model, lg)
	}
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}

func serve(addr, model string, lg *logFile) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	switch model {
	case "goroutine", "burst":
		w := newWriter(lg, model == "burst")
		go w.run()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return err
			}
			go w.serveConn(nc)
		}
	case "eventloop":
		return eventLoop(ln, lg)
	}
	return fmt.Errorf("unknown model %q", model)
}

// logFile is a zero-filled file written in place, from its start again
// when full, so that an fdatasync flushes data only (no size change).
type logFile struct {
	f   *os.File
	off int64
}

const logSize = 64 << 20

func openLog(path string) (*logFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(make([]byte, logSize)); err != nil {
		return nil, err
	}
	return &logFile{f: f}, f.Sync()
}

// commit writes b and waits until it is durable.
func (l *logFile) commit(b []byte) error {
	if l.off+int64(len(b)) > logSize {
		l.off = 0
	}
	if _, err := l.f.WriteAt(b, l.off); err != nil {
		return err
	}
	l.off += int64(len(b))
	return fdatasync(l.f)
}

// parse appends the arguments of the complete RESP commands at the front
// of b to rec and returns how many it took and the bytes they used.
func parse(b []byte, rec []byte) (n, used int, _ []byte, _ error) {
	for used < len(b) {
		if b[used] != '*' {
			return n, used, rec, errors.New("only RESP arrays are served")
		}
		p, mark := used, len(rec)
		argc, p, ok := header(b, p)
		if !ok {
			break
		}
		for range argc {
			var l int
			if l, p, ok = header(b, p); !ok || p+l+2 > len(b) {
				ok = false
				break
			}
			rec = append(rec, b[p:p+l]...)
			p += l + 2
		}
		if !ok {
			rec = rec[:mark] // an incomplete command: taken with the rest of it
			break
		}
		used = p
		n++
	}
	return n, used, rec, nil
}

// header reads "<type><int>\r\n" at p: the int and where the line ends.
func header(b []byte, p int) (int, int, bool) {
	for i := p + 1; i+1 < len(b); i++ {
		if b[i] == '\r' {
			v, err := strconv.Atoi(string(b[p+1 : i]))
			return v, i + 2, err == nil && v >= 0
		}
	}
	return 0, 0, false
}

// ids hands out the reply of each command: a stream ID of the batch's time.
type ids struct{ ms, seq int64 }

func (g *ids) reply(out []byte, ms int64) []byte {
	if ms > g.ms {
		g.ms, g.seq = ms, 0
	}
	g.seq++
	var id [40]byte
	b := strconv.AppendInt(append(strconv.AppendInt(id[:0], g.ms, 10), '-'), g.seq, 10)
	out = strconv.AppendInt(append(out, '$'), int64(len(b)), 10)
	out = append(append(append(out, "\r\n"...), b...), "\r\n"...)
	return out
}

// writer is the log writer of the goroutine and burst models.
type writer struct {
	lg    *logFile
	burst bool
	mu    sync.Mutex
	cond  *sync.Cond
	queue []*op
	ids   ids
}

// op is one read's commands: their bytes, how many, and where the replies go.
type op struct {
	rec  []byte
	n    int
	nc   net.Conn
	out  []byte        // the replies (filled by the writer)
	done chan struct{} // closed when out is ready (goroutine model)
}

func newWriter(lg *logFile, burst bool) *writer {
	w := &writer{lg: lg, burst: burst}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *writer) run() {
	var batch []*op
	var buf []byte
	for {
		w.mu.Lock()
		for len(w.queue) == 0 {
			w.cond.Wait()
		}
		batch, w.queue = w.queue, batch[:0]
		w.mu.Unlock()
		buf = buf[:0]
		for _, o := range batch {
			buf = append(buf, o.rec...)
		}
		if err := w.lg.commit(buf); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		ms := time.Now().UnixMilli()
		for i, o := range batch {
			for range o.n {
				o.out = w.ids.reply(o.out, ms)
			}
			if w.burst {
				o.nc.Write(o.out) // an error shows in the connection's next read
			} else {
				close(o.done)
			}
			batch[i] = nil
		}
	}
}

func (w *writer) serveConn(nc net.Conn) {
	defer nc.Close()
	buf := make([]byte, 64<<10)
	have := 0
	for {
		m, err := nc.Read(buf[have:])
		if err != nil {
			return
		}
		have += m
		n, used, rec, err := parse(buf[:have], nil)
		if err != nil {
			nc.Write([]byte("-ERR " + err.Error() + "\r\n"))
			return
		}
		have = copy(buf, buf[used:have])
		if have == len(buf) {
			return // a command larger than the buffer
		}
		if n == 0 {
			continue
		}
		o := &op{rec: rec, n: n, nc: nc}
		if !w.burst {
			o.done = make(chan struct{})
		}
		w.mu.Lock()
		w.queue = append(w.queue, o)
		w.mu.Unlock()
		w.cond.Signal()
		if !w.burst {
			<-o.done
			if _, err := nc.Write(o.out); err != nil {
				return
			}
		}
	}
}
