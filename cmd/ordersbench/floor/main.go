// Command floor is the least a Go server of raftstream's shape spends on a
// durable write. A goroutine per connection reads RESP commands and replies
// to each with a stream ID, as XADD does. With -mode batch it first hands
// what it read to one batching goroutine, which takes everything queued,
// writes a record per command to a file, fdatasyncs it and wakes the
// connections, one entry in flight at a time: raftstream's single-node write
// path without Raft, the engine or the command table. -mode batch-reply is
// the same, but the batcher writes the replies itself, so a connection's
// goroutine wakes only for its client's next command (a blocking write from
// the batcher: a shortcut only a benchmark may take). With -mode direct it
// replies at once and writes nothing. -mode epoll has no goroutine per
// connection: redis-server's event loop, written in Go (epoll_linux.go).
//
// cmd/ordersbench/single-node.sh floor runs it beside redis-server
// --appendfsync always and a raftstream node, to tell how much of a node's
// CPU per XADD at -P 1 this shape costs before raftstream adds anything.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7777", "listen address host:port")
	mode := flag.String("mode", "batch", "batch (one fdatasync per batch before the replies), batch-reply (the batcher writes the replies), direct (reply at once) or epoll (one epoll loop reads, fdatasyncs and replies)")
	dir := flag.String("dir", os.TempDir(), "where the batch and epoll modes write their file (removed at exit)")
	fsync := flag.Bool("fsync", true, "batch modes: fdatasync each batch's write")
	sleep := flag.Duration("sleep", 0, "batch modes: instead of each batch's write and fdatasync, sleep this long")
	prealloc := flag.Int64("prealloc", 0, "batch and epoll modes: zero-fill and fdatasync this many bytes of the file first, and overwrite them in a ring (no size change for fdatasync to record)")
	overlap := flag.Bool("overlap", false, "epoll mode: a second goroutine writes, fdatasyncs and replies while the loop reads the next batch")
	flag.Parse()
	if *mode != "batch" && *mode != "batch-reply" && *mode != "direct" && *mode != "epoll" {
		fmt.Fprintf(os.Stderr, "floor: -mode %q: want batch, batch-reply, direct or epoll\n", *mode)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	s, err := newServer(*mode, *dir, *overlap)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	s.fsync, s.sleep = *fsync, *sleep
	if err := s.preallocate(*prealloc); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		ln.Close()
	}()
	s.serve(ln)
	s.close()
	if b := s.batches.Load(); b > 0 {
		fmt.Fprintf(os.Stderr, "floor: %d commands in %d batches\n", s.commands.Load(), b)
	}
}

// server is one floor server; batch mode has a log file and a batcher.
type server struct {
	log      *os.File      // nil: direct mode
	el       *eloop        // epoll mode
	overlap  bool          // epoll mode: a syncer goroutine writes and answers
	reply    bool          // batch-reply mode
	fsync    bool          // fdatasync each batch
	sleep    time.Duration // > 0: sleep instead of the write and fdatasync
	queue    chan *request
	stop     chan struct{} // closed by close: the batcher returns
	stopped  chan struct{} // closed when it has
	buf      []byte        // persist's records (one goroutine at a time)
	ring     int64         // > 0: the file's preallocated size, written in a ring
	off      int64         // where the next write goes in the ring
	batches  atomic.Int64  // batches written (each one fdatasync by default)
	commands atomic.Int64  // commands they carried
	seq      atomic.Int64  // the IDs' sequence numbers
}

// request is one read's commands, waiting for their batch's fdatasync:
// done is closed then, or in batch-reply mode the batcher writes the
// replies to w.
type request struct {
	n    int
	done chan struct{}
	err  error
	w    net.Conn
}

func newServer(mode, dir string, overlap bool) (*server, error) {
	s := &server{reply: mode == "batch-reply", fsync: true, overlap: overlap}
	if mode == "direct" {
		return s, nil
	}
	f, err := os.CreateTemp(dir, "floor-*.log")
	if err != nil {
		return nil, err
	}
	if mode == "epoll" {
		s.log = f
		if err := s.startEpoll(); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
		return s, nil
	}
	s.log, s.queue = f, make(chan *request, 8192)
	s.stop, s.stopped = make(chan struct{}), make(chan struct{})
	go s.batcher()
	return s, nil
}

// close stops the batcher and removes the file. Connections still open
// wait forever for their batch: close is for the end of the process or of
// a test.
func (s *server) close() {
	if s.el != nil {
		s.stopEpoll()
	}
	if s.log != nil {
		if s.el == nil {
			close(s.stop)
			<-s.stopped
		}
		s.log.Close()
		os.Remove(s.log.Name())
	}
}

// preallocate zero-fills n bytes of the log and makes them durable, so that
// later writes overwrite them (s.write) without growing the file.
func (s *server) preallocate(n int64) error {
	if n <= 0 || s.log == nil {
		return nil
	}
	zero := make([]byte, 1<<20)
	for off := int64(0); off < n; off += int64(len(zero)) {
		if _, err := s.log.WriteAt(zero[:min(int64(len(zero)), n-off)], off); err != nil {
			return err
		}
	}
	s.ring = n
	return s.log.Sync()
}

// write appends buf to the log, or with a preallocated ring overwrites the
// ring's next bytes.
func (s *server) write(buf []byte) error {
	if s.ring == 0 {
		_, err := s.log.Write(buf)
		return err
	}
	for len(buf) > 0 {
		if s.off >= s.ring {
			s.off = 0
		}
		n := min(int64(len(buf)), s.ring-s.off)
		if _, err := s.log.WriteAt(buf[:n], s.off); err != nil {
			return err
		}
		s.off += n
		buf = buf[n:]
	}
	return nil
}

// recordSize is what batch mode writes per command: about an order entry.
const recordSize = 128

var record [recordSize]byte

// batcher takes whatever is queued, writes it, fdatasyncs, and answers it.
func (s *server) batcher() {
	defer close(s.stopped)
	var (
		batch []*request
		out   []byte // batch-reply mode: one connection's replies
	)
	for {
		select {
		case r := <-s.queue:
			batch = append(batch[:0], r)
		case <-s.stop:
			return
		}
	fill:
		for {
			select {
			case r := <-s.queue:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		n := 0
		for _, r := range batch {
			n += r.n
		}
		err := s.persist(n)
		for _, r := range batch {
			if r.w != nil { // batch-reply mode
				out = s.appendReplies(out[:0], r.n, r.err, err)
				r.w.Write(out)
				if r.done == nil {
					continue
				}
			}
			if r.err == nil {
				r.err = err
			}
			close(r.done)
		}
	}
}

// persist makes n commands durable: a record each, one write and one
// fdatasync, or the -sleep in their place. One goroutine calls it: the
// batcher, the epoll loop or its syncer.
func (s *server) persist(n int) error {
	if n == 0 {
		return nil
	}
	s.buf = s.buf[:0]
	for range n {
		s.buf = append(s.buf, record[:]...)
	}
	var err error
	if s.sleep > 0 {
		time.Sleep(s.sleep)
	} else if err = s.write(s.buf); err == nil && s.fsync {
		err = syscall.Fdatasync(int(s.log.Fd()))
	}
	s.batches.Add(1)
	s.commands.Add(int64(n))
	return err
}

func (s *server) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if s.el != nil {
			if err := s.adopt(c); err != nil {
				fmt.Fprintln(os.Stderr, "floor:", err)
			}
			continue
		}
		go s.conn(c)
	}
}

var errProtocol = errors.New("Protocol error: expected a multibulk command")

// conn reads what the client sent, makes it durable (batch mode), replies
// to every command with an ID, repeats.
func (s *server) conn(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReaderSize(c, 16<<10)
	var out []byte
	for {
		// The commands of one read, up to a protocol error if any: they
		// are answered, then the error, and the connection closes.
		n := 0
		var perr error
		for n == 0 || rd.Buffered() > 0 {
			if err := skipCommand(rd); err != nil {
				if !errors.Is(err, errProtocol) {
					return
				}
				perr = err
				break
			}
			n++
		}
		if s.reply {
			r := &request{n: n, err: perr, w: c}
			if perr != nil {
				r.done = make(chan struct{})
			}
			s.queue <- r
			if perr != nil {
				<-r.done
				return
			}
			continue
		}
		var werr error
		if s.log != nil && n > 0 {
			r := &request{n: n, done: make(chan struct{})}
			s.queue <- r
			<-r.done
			werr = r.err
		}
		out = s.appendReplies(out[:0], n, perr, werr)
		if _, err := c.Write(out); err != nil || perr != nil || werr != nil {
			return
		}
	}
}

// appendReplies appends the replies to n commands: an ID each, as XADD's,
// then the connection's protocol error if any; or, when the write failed,
// that error alone.
func (s *server) appendReplies(b []byte, n int, perr, werr error) []byte {
	if werr != nil {
		return append(append(append(b, "-ERR "...), werr.Error()...), "\r\n"...)
	}
	ms := time.Now().UnixMilli()
	var idb [48]byte
	for range n {
		id := strconv.AppendInt(append(strconv.AppendInt(idb[:0], ms, 10), '-'), s.seq.Add(1), 10)
		b = strconv.AppendInt(append(b, '$'), int64(len(id)), 10)
		b = append(append(append(b, "\r\n"...), id...), "\r\n"...)
	}
	if perr != nil {
		b = append(append(append(b, "-ERR "...), perr.Error()...), "\r\n"...)
	}
	return b
}

// skipCommand reads one RESP multibulk command and discards it.
func skipCommand(rd *bufio.Reader) error {
	argc, err := readLen(rd, '*')
	if err != nil {
		return err
	}
	for range argc {
		size, err := readLen(rd, '$')
		if err != nil {
			return err
		}
		if _, err := rd.Discard(size + 2); err != nil {
			return err
		}
	}
	return nil
}

// readLen reads a "<kind><n>\r\n" line and returns n.
func readLen(rd *bufio.Reader, kind byte) (int, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return 0, errProtocol
		}
		return 0, err
	}
	if len(line) < 4 || line[0] != kind || line[len(line)-2] != '\r' {
		return 0, errProtocol
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil || n < 0 || n > 1<<20 {
		return 0, errProtocol
	}
	return n, nil
}
