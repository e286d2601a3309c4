// Command floor is the least a Go server of raftstream's shape spends on a
// durable write. A goroutine per connection reads RESP commands and replies
// to each with a stream ID, as XADD does. With -mode batch it first hands
// what it read to one batching goroutine, which takes everything queued,
// writes a record per command to a file, fdatasyncs it and wakes the
// connections, one entry in flight at a time: raftstream's single-node write
// path without Raft, the engine or the command table. With -mode direct it
// replies at once and writes nothing.
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
	mode := flag.String("mode", "batch", "batch (one fdatasync per batch before the replies) or direct (reply at once)")
	dir := flag.String("dir", os.TempDir(), "where -mode batch writes its file (removed at exit)")
	flag.Parse()
	if *mode != "batch" && *mode != "direct" {
		fmt.Fprintf(os.Stderr, "floor: -mode %q: want batch or direct\n", *mode)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	s, err := newServer(*mode, *dir)
	if err != nil {
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
		fmt.Fprintf(os.Stderr, "floor: %d commands in %d fdatasyncs\n", s.commands.Load(), b)
	}
}

// server is one floor server; batch mode has a log file and a batcher.
type server struct {
	log      *os.File // nil: direct mode
	queue    chan *request
	batches  atomic.Int64 // fdatasyncs made
	commands atomic.Int64 // commands they carried
	seq      atomic.Int64 // the IDs' sequence numbers
}

// request is one read's commands, waiting for their batch's fdatasync.
type request struct {
	n    int
	done chan struct{}
	err  error
}

func newServer(mode, dir string) (*server, error) {
	s := &server{}
	if mode == "direct" {
		return s, nil
	}
	f, err := os.CreateTemp(dir, "floor-*.log")
	if err != nil {
		return nil, err
	}
	s.log, s.queue = f, make(chan *request, 8192)
	go s.batcher()
	return s, nil
}

func (s *server) close() {
	if s.log != nil {
		close(s.queue)
		s.log.Close()
		os.Remove(s.log.Name())
	}
}

// recordSize is what batch mode writes per command: about an order entry.
const recordSize = 128

var record [recordSize]byte

// batcher takes whatever is queued, writes it, fdatasyncs, and answers it.
func (s *server) batcher() {
	var batch []*request
	buf := make([]byte, 0, 64*recordSize)
	for r := range s.queue {
		batch = append(batch[:0], r)
	fill:
		for {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		buf = buf[:0]
		n := 0
		for _, r := range batch {
			n += r.n
			for range r.n {
				buf = append(buf, record[:]...)
			}
		}
		_, err := s.log.Write(buf)
		if err == nil {
			err = syscall.Fdatasync(int(s.log.Fd()))
		}
		s.batches.Add(1)
		s.commands.Add(int64(n))
		for _, r := range batch {
			r.err = err
			close(r.done)
		}
	}
}

func (s *server) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
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
	w := bufio.NewWriterSize(c, 16<<10)
	for {
		n := 0
		for n == 0 || rd.Buffered() > 0 {
			if err := skipCommand(rd); err != nil {
				if errors.Is(err, errProtocol) {
					w.WriteString("-ERR " + err.Error() + "\r\n")
					w.Flush()
				}
				return
			}
			n++
		}
		if s.log != nil {
			r := &request{n: n, done: make(chan struct{})}
			s.queue <- r
			<-r.done
			if r.err != nil {
				w.WriteString("-ERR " + r.err.Error() + "\r\n")
				w.Flush()
				return
			}
		}
		ms := time.Now().UnixMilli()
		for range n {
			id := strconv.AppendInt(append(strconv.AppendInt(nil, ms, 10), '-'), s.seq.Add(1), 10)
			w.WriteString("$" + strconv.Itoa(len(id)) + "\r\n")
			w.Write(id)
			w.WriteString("\r\n")
		}
		if w.Flush() != nil {
			return
		}
	}
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
