package wire

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"

	"github.com/raftstream/raftstream/engine"
)

// Reader reads client requests — RESP multibulks and inline commands —
// from a connection. It is the one parser of request bytes: each byte is
// looked at once, and it enforces Redis's protocol limits while it parses,
// before it buffers more than one command's worth of input:
//
//   - a multibulk count above INT_MAX, or a bulk length above MaxBulk
//     (proto-max-bulk-len) or below zero, is a protocol error ("invalid
//     multibulk length", "invalid bulk length");
//   - a header line longer than 64 KiB is a protocol error, as in Redis
//     (an inline request is bounded by the query buffer limit alone);
//   - empty multibulks ("*0", "*-1") and blank inline lines are skipped;
//   - the command being received may not grow past the query buffer limit
//     (Limits.QueryOver), which ends the connection without a reply;
//   - the commands handed over at once are bounded by the read window
//     (at most ReadWindow bytes plus the command that straddled it), so a
//     client streaming commands (redis-cli --pipe) is served in bounded
//     pipelines.
//
// A protocol error comes after the complete commands that preceded it in
// the stream, as in Redis: ReadCommands returns those first and the error
// on the next call.
//
// The commands of one call share one copy of their bytes and one argument
// slice, so the caller may keep arguments after later calls (a MULTI queue
// does); the [][][]byte itself is reused by the next call.
//
// A Reader is owned by one goroutine.
type Reader struct {
	r   io.Reader
	lim Limits

	buf        []byte // buf[start:end] is read and not yet handed over
	start, end int

	// The command at buf[start:] whose parse is incomplete resumes at
	// start+cur with this state, so a long command arriving in small reads
	// is not scanned again from its beginning at every read.
	cur   int // bytes of the command parsed so far
	count int // its declared argument count; 0 before its header is read
	got   int // its arguments parsed (the last 2*got marks)
	bulk  int // length of the bulk whose payload is awaited; -1 for none

	cmds  [][][]byte
	marks []int // argument offsets in buf relative to start: 2 per argument
	spans []span
	err   error // a protocol error, returned after the commands before it
}

// span is one parsed multibulk command: its bytes end at end (relative to
// start) and its arguments' offsets are marks[m : m+2*n].
type span struct{ end, m, n int }

// Limits are the protocol limits a Reader enforces.
type Limits struct {
	// MaxBulk is the largest accepted bulk (proto-max-bulk-len); <= 0
	// means 512 MiB, Redis's default.
	MaxBulk int64
	// MaxBulkLive, when set, is read at every bulk header instead of
	// MaxBulk: the caller may change the limit at run time (CONFIG SET
	// proto-max-bulk-len) for the connections already open.
	MaxBulkLive *atomic.Int64
	// QueryOver, when set, is asked with the size of a command still being
	// received each time it grows; true ends the connection
	// (ErrQueryLimit). The caller owns the limit, which may change at run
	// time, and the accounting of what it refused.
	QueryOver func(pending int64) bool
}

// ProtocolError is a malformed request; the server replies
// "-ERR Protocol error: <Msg>" and closes the connection, as Redis does.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// ErrQueryLimit ends a connection whose pending command outgrew the query
// buffer limit; the server closes it without a reply, as Redis does.
var ErrQueryLimit = errors.New("client reached max query buffer length")

var (
	errMultibulkLength = &ProtocolError{"invalid multibulk length"}
	errBulkLength      = &ProtocolError{"invalid bulk length"}
	errBigCount        = &ProtocolError{"too big mbulk count string"}
	errBigBulkCount    = &ProtocolError{"too big bulk count string"}
	errUnbalanced      = &ProtocolError{"unbalanced quotes in request"}
)

const (
	// MaxArgs is Redis's limit on a multibulk count (INT_MAX).
	MaxArgs = 1<<31 - 1
	// maxLine is Redis's PROTO_INLINE_MAX_SIZE: the longest header line.
	maxLine = 64 << 10
	// minReadBuf is the buffer a reader starts with and returns to
	// (Redis's PROTO_IOBUF_LEN); maxKeptReadBuf the largest it keeps once
	// drained.
	minReadBuf     = 16 << 10
	maxKeptReadBuf = 64 << 10
	// ReadWindow bounds the buffer a stream of commands makes the reader
	// grow to, and so the bytes of commands one call hands over: a
	// pipeline of about 2,700 XADDs of 90 bytes.
	ReadWindow = 256 << 10
	// maxKeptCmds bounds the command and offset slices a reader keeps
	// from one call to the next.
	maxKeptCmds = 1024
)

// maxBulk is the bulk length limit in force.
func (rd *Reader) maxBulk() int64 {
	if rd.lim.MaxBulkLive != nil {
		return rd.lim.MaxBulkLive.Load()
	}
	return rd.lim.MaxBulk
}

// NewReader returns a reader of requests from r.
func NewReader(r io.Reader, lim Limits) *Reader {
	if lim.MaxBulk <= 0 {
		lim.MaxBulk = 512 << 20
	}
	return &Reader{r: r, lim: lim, buf: make([]byte, minReadBuf), bulk: -1}
}

// Buffered is how many bytes were read and not returned as commands yet
// (the start of a command still arriving).
func (rd *Reader) Buffered() int { return rd.end - rd.start }

// ReadCommands returns the complete commands buffered, reading from the
// connection until there is at least one. Each command is its arguments;
// the first is the command name.
func (rd *Reader) ReadCommands() ([][][]byte, error) {
	rd.reset()
	for {
		if rd.err != nil {
			return nil, rd.err
		}
		if err := rd.parse(); err != nil {
			rd.err = err
		}
		if len(rd.cmds) > 0 {
			return rd.cmds, nil
		}
		if rd.err != nil {
			return nil, rd.err
		}
		if pending := int64(rd.end - rd.start); pending > 0 && rd.lim.QueryOver != nil && rd.lim.QueryOver(pending) {
			rd.err = ErrQueryLimit
			return nil, rd.err
		}
		rd.makeRoom()
		n, err := rd.r.Read(rd.buf[rd.end:])
		rd.end += n
		if rd.end == len(rd.buf) && len(rd.buf) < ReadWindow {
			// The read filled the buffer: more is likely waiting; take
			// it in larger reads (up to the window).
			rd.grow(min(2*len(rd.buf), ReadWindow))
		}
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

// reset forgets the last call's commands (they keep that call's bytes
// alive), dropping what a bulk load grew.
func (rd *Reader) reset() {
	if cap(rd.cmds) > maxKeptCmds {
		rd.cmds, rd.spans = nil, nil
	} else {
		clear(rd.cmds[:cap(rd.cmds)])
		rd.cmds, rd.spans = rd.cmds[:0], rd.spans[:0]
	}
	if cap(rd.marks) > 16*maxKeptCmds && len(rd.marks) < maxKeptCmds {
		// Only an incomplete command's offsets are left: keep those.
		rd.marks = append([]int(nil), rd.marks...)
	}
	if rd.start == rd.end {
		// Drained: read at the front again, keeping a buffer of modest
		// size.
		if cap(rd.buf) > maxKeptReadBuf {
			rd.buf = make([]byte, minReadBuf)
		}
		rd.start, rd.end = 0, 0
	}
}

// makeRoom makes space to read into: it moves an incomplete command to the
// buffer's front, or grows the buffer when the command fills it.
func (rd *Reader) makeRoom() {
	if rd.end < len(rd.buf) {
		return
	}
	if rd.start > 0 {
		n := copy(rd.buf, rd.buf[rd.start:rd.end])
		rd.start, rd.end = 0, n
		return
	}
	size := 2 * len(rd.buf)
	if rd.bulk >= 0 {
		// The payload's length is known: room for all of it at once.
		size = max(size, rd.cur+rd.bulk+2)
	}
	rd.grow(size)
}

func (rd *Reader) grow(size int) {
	if size <= len(rd.buf) {
		return
	}
	nb := make([]byte, size)
	n := copy(nb, rd.buf[rd.start:rd.end])
	rd.buf, rd.start, rd.end = nb, 0, n
}

// parse takes the complete commands at the front of the buffered bytes
// into rd.cmds. A protocol error is returned after what came before it was
// taken.
func (rd *Reader) parse() error {
	b := rd.buf[rd.start:rd.end]
	// pos is where the next command starts in b; multibulks seen since the
	// last inline command are in spans, cut out together.
	pos, from := 0, 0
	var err error
	for pos < len(b) {
		if rd.count == 0 && b[pos] != '*' {
			rd.cutSpans(b[from:pos], from)
			if bytes.IndexByte(b[pos+rd.cur:], '\n') < 0 {
				// Incomplete: the next parse looks for its end after what
				// was scanned. The query buffer limit bounds its length.
				rd.cur = len(b) - pos
				break
			}
			rd.cur = 0
			end, argv, ierr := parseInline(b[pos:])
			if ierr != nil {
				err = ierr
				break
			}
			if len(argv) > 0 {
				rd.cmds = append(rd.cmds, argv)
			}
			pos += end
			from = pos
			continue
		}
		end, n, merr := rd.parseMultibulk(b[pos:], pos)
		if merr != nil {
			err = merr
			break
		}
		if end == 0 {
			break // incomplete: rd.cur and friends say how far it got
		}
		pos += end
		if n > 0 {
			rd.spans = append(rd.spans, span{end: pos, m: len(rd.marks) - 2*n, n: n})
		}
	}
	rd.cutSpans(b[from:pos], from)
	rd.start += pos
	// Offsets of an incomplete command's arguments (all that is left in
	// marks) are kept relative to the new start.
	if pos > 0 {
		for i := range rd.marks {
			rd.marks[i] -= pos
		}
	}
	return err
}

// cutSpans turns the multibulks in spans, which are the bytes seg (at
// offset base of the parsed bytes), into commands sharing one copy of seg
// and one argument slice.
func (rd *Reader) cutSpans(seg []byte, base int) {
	if len(rd.spans) == 0 {
		return
	}
	data := append([]byte(nil), seg...)
	nargs := 0
	for _, s := range rd.spans {
		nargs += s.n
	}
	args := make([][]byte, nargs)
	for _, s := range rd.spans {
		argv := args[:s.n:s.n]
		args = args[s.n:]
		for i := range argv {
			a, e := rd.marks[s.m+2*i]-base, rd.marks[s.m+2*i+1]-base
			argv[i] = data[a:e:e]
		}
		rd.cmds = append(rd.cmds, argv)
	}
	rd.spans = rd.spans[:0]
	// What follows the spans' offsets is the incomplete command's.
	rd.marks = rd.marks[:copy(rd.marks, rd.marks[len(rd.marks)-2*rd.got:])]
}

// parseMultibulk parses the multibulk at the start of b (at offset off of
// the parsed bytes), resuming where an earlier call left it (rd.cur,
// rd.count, rd.bulk). It returns the command's length and argument count
// once it is complete (n 0 for an empty multibulk, which is skipped), or
// end 0 while it is not.
func (rd *Reader) parseMultibulk(b []byte, off int) (end, n int, err error) {
	i := rd.cur
	if rd.count == 0 {
		line, next, err := headerLine(b, 0, errMultibulkLength, errBigCount)
		if err != nil || next == 0 {
			return 0, 0, err
		}
		count, ok := engine.ParseInt(line[1:])
		switch {
		case !ok || count > MaxArgs:
			return 0, 0, errMultibulkLength
		case count <= 0:
			// Redis ignores empty multibulks.
			return next, 0, nil
		}
		rd.count, rd.got, rd.bulk, i = int(count), 0, -1, next
	}
	for rd.got < rd.count {
		if rd.bulk < 0 {
			if i >= len(b) {
				break
			}
			if b[i] != '$' {
				return 0, 0, &ProtocolError{"expected '$', got '" + string(b[i]) + "'"}
			}
			line, next, err := headerLine(b, i, errBulkLength, errBigBulkCount)
			if err != nil {
				return 0, 0, err
			}
			if next == 0 {
				break
			}
			size, ok := engine.ParseInt(line[1:])
			if !ok || size < 0 || size > rd.maxBulk() {
				return 0, 0, errBulkLength
			}
			rd.bulk, i = int(size), next
		}
		if i+rd.bulk+2 > len(b) {
			break // the payload is not all here yet
		}
		if b[i+rd.bulk] != '\r' || b[i+rd.bulk+1] != '\n' {
			return 0, 0, errBulkLength
		}
		rd.marks = append(rd.marks, off+i, off+i+rd.bulk)
		rd.got++
		i += rd.bulk + 2
		rd.bulk = -1
	}
	if rd.got < rd.count {
		rd.cur = i
		return 0, 0, nil
	}
	n = rd.count
	rd.cur, rd.count, rd.got = 0, 0, 0
	return i, n, nil
}

// headerLine finds the "*<n>\r\n" or "$<n>\r\n" line starting at b[i]. It
// returns the line without its CRLF and the offset after it, or next 0
// while the line is incomplete. A line not ended by CRLF is invalid; one
// longer than Redis allows is too big.
func headerLine(b []byte, i int, invalid, tooBig error) (line []byte, next int, err error) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		if len(b)-i > maxLine {
			return nil, 0, tooBig
		}
		return nil, 0, nil
	}
	if j < 2 || b[i+j-1] != '\r' {
		return nil, 0, invalid
	}
	return b[i : i+j-1], i + j + 1, nil
}

// parseInline parses one complete inline (telnet) command at the start of
// b (its arguments are copies): space-separated words, with single or
// double quotes and \n \r \t escapes inside double quotes. A blank line
// gives a command without arguments.
func parseInline(b []byte) (end int, args [][]byte, err error) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		var line []byte
		if i > 0 && b[i-1] == '\r' {
			line = b[:i-1]
		} else {
			line = b[:i]
		}
		var quote bool
		var quotech byte
		var escape bool
	outer:
		for {
			nline := make([]byte, 0, len(line))
			for i := 0; i < len(line); i++ {
				c := line[i]
				if !quote {
					if c == ' ' {
						if len(nline) > 0 {
							args = append(args, nline)
						}
						line = line[i+1:]
						continue outer
					}
					if c == '"' || c == '\'' {
						if i != 0 {
							return 0, nil, errUnbalanced
						}
						quotech = c
						quote = true
						line = line[i+1:]
						continue outer
					}
				} else {
					if escape {
						escape = false
						switch c {
						case 'n':
							c = '\n'
						case 'r':
							c = '\r'
						case 't':
							c = '\t'
						}
					} else if c == quotech {
						quote = false
						quotech = 0
						args = append(args, nline)
						line = line[i+1:]
						if len(line) > 0 && line[0] != ' ' {
							return 0, nil, errUnbalanced
						}
						continue outer
					} else if c == '\\' {
						escape = true
						continue
					}
				}
				nline = append(nline, c)
			}
			if quote {
				return 0, nil, errUnbalanced
			}
			if len(line) > 0 {
				args = append(args, line)
			}
			break
		}
		for i := range args {
			args[i] = append([]byte(nil), args[i]...)
		}
		return i + 1, args, nil
	}
	return -1, nil, nil
}
