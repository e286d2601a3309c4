package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// everyReply is one well-formed reply of every RESP2/RESP3 type, alone and
// nested, with the Go value Parse gives for it.
var everyReply = []struct {
	name, raw string
	want      any
}{
	{"simple string", "+OK\r\n", "OK"},
	{"empty simple string", "+\r\n", ""},
	{"error", "-ERR unknown command 'FOO'\r\n", Error("ERR unknown command 'FOO'")},
	{"integer", ":-42\r\n", int64(-42)},
	{"bulk", "$5\r\nhe\r\no\r\n", "he\r\no"},
	{"empty bulk", "$0\r\n\r\n", ""},
	{"null bulk", "$-1\r\n", nil},
	{"array", "*2\r\n$1\r\na\r\n:1\r\n", []any{"a", int64(1)}},
	{"empty array", "*0\r\n", []any{}},
	{"null array", "*-1\r\n", nil},
	{"null", "_\r\n", nil},
	{"double", ",1.5\r\n", 1.5},
	{"boolean true", "#t\r\n", true},
	{"boolean false", "#f\r\n", false},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", "3492890328409238509324850943850943825024385"},
	{"verbatim", "=15\r\ntxt:Some string\r\n", "Some string"},
	{"bulk error", "!21\r\nSYNTAX invalid syntax\r\n", Error("SYNTAX invalid syntax")},
	{"map", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", []any{"first", int64(1), "second", int64(2)}},
	{"set", "~2\r\n+a\r\n+b\r\n", []any{"a", "b"}},
	{"push", ">2\r\n+message\r\n$2\r\nhi\r\n", []any{"message", "hi"}},
	{"attribute then its reply", "|1\r\n+ttl\r\n:3600\r\n*1\r\n:7\r\n", []any{int64(7)}},
	{"nested", "*3\r\n%1\r\n$1\r\nk\r\n~1\r\n*-1\r\n>1\r\n_\r\n|1\r\n+a\r\n+b\r\n$-1\r\n",
		[]any{[]any{"k", []any{nil}}, []any{nil}, nil}},
	{"XREAD reply", "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
		[]any{[]any{"s", []any{[]any{"1-1", []any{"f", "v"}}}}}},
}

// TestReadReplyEveryType: each reply is read exactly, leaving the next
// reply in the reader; Parse decodes it to the documented Go value.
func TestReadReplyEveryType(t *testing.T) {
	for _, tc := range everyReply {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tc.raw + "+NEXT\r\n"))
			got, err := ReadReply(r)
			if err != nil || string(got) != tc.raw {
				t.Fatalf("ReadReply = %q, %v; want %q", got, err, tc.raw)
			}
			if next, err := ReadReply(r); err != nil || string(next) != "+NEXT\r\n" {
				t.Fatalf("the following reply = %q, %v", next, err)
			}
			v, err := Parse([]byte(tc.raw))
			if err != nil || !reflect.DeepEqual(v, tc.want) {
				t.Fatalf("Parse = %#v, %v; want %#v", v, err, tc.want)
			}
		})
	}
}

// TestIncompleteReplyIsAnError: every proper prefix of every reply is an
// error for ReadReply (io.EOF or io.ErrUnexpectedEOF when the input just
// stops) and for Parse.
func TestIncompleteReplyIsAnError(t *testing.T) {
	for _, tc := range everyReply {
		for i := 0; i < len(tc.raw); i++ {
			part := tc.raw[:i]
			got, err := ReadReply(bufio.NewReader(strings.NewReader(part)))
			if err == nil {
				t.Errorf("%s: ReadReply(%q) = %q with no error", tc.name, part, got)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: ReadReply(%q): %v, want an EOF", tc.name, part, err)
			}
			if v, err := Parse([]byte(part)); err == nil {
				t.Errorf("%s: Parse(%q) = %#v with no error", tc.name, part, v)
			}
		}
	}
}

func TestMalformedReplies(t *testing.T) {
	for _, raw := range []string{
		"\r\n",               // no type
		"+OK\n",              // LF without CR
		"?what\r\n",          // unknown type
		"$x\r\n",             // bad length
		"$-2\r\n",            // negative length other than null
		"*1x\r\n:1\r\n",      // bad count
		"$3\r\nabcXY",        // bulk not followed by CRLF
		"*1\r\n?\r\n",        // bad element
		"|1\r\n+a\r\n+b\r\n", // attribute without its reply
	} {
		if got, err := ReadReply(bufio.NewReader(strings.NewReader(raw))); err == nil {
			t.Errorf("ReadReply(%q) = %q with no error", raw, got)
		}
		if v, err := Parse([]byte(raw)); err == nil {
			t.Errorf("Parse(%q) = %#v with no error", raw, v)
		}
	}
	// Parse decodes what ReadReply only frames.
	for _, raw := range []string{":1x\r\n", ",pi\r\n", "#x\r\n", "+OK\r\n+OK\r\n"} {
		if v, err := Parse([]byte(raw)); err == nil {
			t.Errorf("Parse(%q) = %#v with no error", raw, v)
		}
	}
}

// TestLongLinesAndBulks: lines and bulks longer than the reader's buffer and
// than the decoder's preallocation are read whole.
func TestLongLinesAndBulks(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	for _, raw := range []string{"+" + long + "\r\n", "$" + strconv.Itoa(len(long)) + "\r\n" + long + "\r\n", encodeArgs(long, long)} {
		got, err := ReadReply(bufio.NewReaderSize(strings.NewReader(raw), 16))
		if err != nil || string(got) != raw {
			t.Fatalf("ReadReply of %d bytes: %d bytes, %v", len(raw), len(got), err)
		}
	}
	// A length is a claim: a huge one with no data is an error, not an
	// allocation of that size.
	if _, err := ReadReply(bufio.NewReader(strings.NewReader("$9223372036854775000\r\nabc"))); err == nil {
		t.Fatal("a bulk claiming 9 EB was read from 3 bytes")
	}
}

// encodeArgs encodes one command (a test shorthand).
func encodeArgs(args ...string) string { return string(AppendCommand(nil, args)) }

func TestAppendCommand(t *testing.T) {
	if got := encodeArgs("XADD", "s", "*", "f", ""); got != "*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nf\r\n$0\r\n\r\n" {
		t.Fatalf("AppendCommand = %q", got)
	}
	b := AppendCommand([]byte("keep"), [][]byte{[]byte("PING")})
	if string(b) != "keep*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("AppendCommand onto a prefix = %q", b)
	}
	v, err := Parse(AppendCommand(nil, []string{"a\r\nb", ""}))
	if err != nil || !reflect.DeepEqual(v, []any{"a\r\nb", ""}) {
		t.Fatalf("a command read back = %#v, %v", v, err)
	}
}

// FuzzReadReply: on any input ReadReply and Parse return without panicking;
// a reply ReadReply accepts is a prefix of the input, reads back as itself,
// and Parse accepts it unless a scalar in it does not decode.
func FuzzReadReply(f *testing.F) {
	for _, tc := range everyReply {
		f.Add([]byte(tc.raw))
	}
	f.Add([]byte("*2\r\n$1\r\na\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		v, perr := Parse(in)
		got, err := ReadReply(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			if perr == nil {
				t.Fatalf("Parse(%q) = %#v but ReadReply fails: %v", in, v, err)
			}
			return
		}
		if !bytes.HasPrefix(in, got) {
			t.Fatalf("ReadReply(%q) = %q, not a prefix", in, got)
		}
		again, err := ReadReply(bufio.NewReader(bytes.NewReader(got)))
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("ReadReply(%q) = %q, %v; want it back", got, again, err)
		}
		if perr == nil && len(got) != len(in) {
			t.Fatalf("Parse(%q) accepted bytes after the reply", in)
		}
	})
}
