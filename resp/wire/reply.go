package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Replies: one reader frames every RESP2/RESP3 reply (ReadReply, for the
// forwarder that relays replies byte for byte and for tests that compare
// them), and the same reader decodes one into Go values (Parse, for the
// operator CLI and for tests that look inside a reply).

// Error is an error reply (- or !), without its leading "-".
type Error string

func (e Error) Error() string { return string(e) }

// AppendCommand appends argv as a RESP array of bulk strings, the form in
// which a client sends every command.
func AppendCommand[S ~string | ~[]byte](b []byte, argv []S) []byte {
	b = AppendLen(b, '*', len(argv))
	for _, a := range argv {
		b = AppendLen(b, '$', len(a))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// ReadReply reads one complete RESP2/RESP3 reply from r and returns its
// exact bytes. An attribute (|) is read together with the reply it
// annotates. On an error the bytes read so far are returned with it.
func ReadReply(r *bufio.Reader) ([]byte, error) {
	d := replyReader{r: r}
	_, err := d.value()
	return d.raw, err
}

// Parse decodes one raw reply, as ReadReply returns it, into Go values:
//
//   - simple, bulk and verbatim strings: string (a verbatim string without
//     its "txt:" format prefix); big numbers: their decimal string;
//   - integers: int64; doubles: float64; booleans: bool;
//   - null, null bulk strings and null arrays: nil;
//   - arrays, sets and pushes: []any; maps: []any of key, value, key, value…
//     (the shape a RESP2 reply of the same command has);
//   - error and bulk error replies: Error, as a value.
//
// An attribute is skipped: the value is the reply it annotates. The error
// is for malformed input, an incomplete reply, or bytes after the reply.
func Parse(raw []byte) (any, error) {
	d := replyReader{r: bufio.NewReader(bytes.NewReader(raw)), values: true}
	v, err := d.value()
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, err
	}
	if len(d.raw) != len(raw) {
		return nil, fmt.Errorf("wire: %d bytes after the reply", len(raw)-len(d.raw))
	}
	return v, nil
}

// replyReader walks one reply. It keeps every byte it reads in raw and, when
// values is set, builds the reply's Go value.
type replyReader struct {
	r      *bufio.Reader
	raw    []byte
	values bool
}

// maxReplyPrealloc caps how many elements or bytes a header makes the
// reader reserve before they arrive: a length is a claim, not data.
const maxReplyPrealloc = 64 << 10

// line reads one CRLF-terminated line and returns it without the CRLF. The
// slice points into d.raw: use it before the next read.
func (d *replyReader) line() ([]byte, error) {
	start := len(d.raw)
	for {
		frag, err := d.r.ReadSlice('\n')
		d.raw = append(d.raw, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	line := d.raw[start:]
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("wire: bad line %q", line)
	}
	return line[:len(line)-2], nil
}

// replyLen parses the length of a bulk or aggregate header; -1 is null.
func replyLen(line []byte) (int, error) {
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < -1 {
		return 0, fmt.Errorf("wire: bad length in %q", line)
	}
	return n, nil
}

// bulk reads n bytes of payload and the CRLF after them, and returns the
// payload (pointing into d.raw: use it before the next read).
func (d *replyReader) bulk(n int) ([]byte, error) {
	start := len(d.raw)
	for left := n + 2; left > 0; {
		k := min(left, maxReplyPrealloc)
		at := len(d.raw)
		d.raw = slices.Grow(d.raw, k)[:at+k]
		got, err := io.ReadFull(d.r, d.raw[at:])
		d.raw = d.raw[:at+got]
		if err != nil {
			return nil, err
		}
		left -= k
	}
	if d.raw[len(d.raw)-2] != '\r' || d.raw[len(d.raw)-1] != '\n' {
		return nil, fmt.Errorf("wire: bulk of %d bytes not followed by CRLF", n)
	}
	return d.raw[start : start+n], nil
}

// value reads one reply; its Go value is nil unless d.values is set.
func (d *replyReader) value() (any, error) {
	line, err := d.line()
	if err != nil {
		return nil, err
	}
	kind, body := line[0], line[1:]
	switch kind {
	case '+', '-', ':', '_', ',', '#', '(':
		if !d.values {
			return nil, nil
		}
		return replyScalar(kind, body)
	case '$', '=', '!':
		n, err := replyLen(line)
		if err != nil || n < 0 {
			return nil, err
		}
		b, err := d.bulk(n)
		if err != nil || !d.values {
			return nil, err
		}
		switch kind {
		case '!':
			return Error(b), nil
		case '=':
			if len(b) >= 4 && b[3] == ':' {
				b = b[4:]
			}
		}
		return string(b), nil
	case '*', '~', '>', '%', '|':
		n, err := replyLen(line)
		if err != nil || n < 0 {
			return nil, err
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		var out []any
		if d.values && kind != '|' {
			out = make([]any, 0, min(n, maxReplyPrealloc))
		}
		for range n {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			if out != nil {
				out = append(out, v)
			}
		}
		if kind == '|' {
			return d.value()
		}
		if !d.values {
			return nil, nil
		}
		return out, nil
	}
	return nil, fmt.Errorf("wire: unknown reply type %q", line)
}

// replyScalar decodes a one-line reply.
func replyScalar(kind byte, body []byte) (any, error) {
	switch kind {
	case '-':
		return Error(body), nil
	case ':':
		return strconv.ParseInt(string(body), 10, 64)
	case '_':
		return nil, nil
	case ',':
		return strconv.ParseFloat(string(body), 64)
	case '#':
		switch string(body) {
		case "t":
			return true, nil
		case "f":
			return false, nil
		}
		return nil, fmt.Errorf("wire: bad boolean %q", body)
	}
	return string(body), nil // + and (
}
