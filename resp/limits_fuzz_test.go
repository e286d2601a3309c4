package resp

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/tidwall/redcon"

	"github.com/raftstream/raftstream/engine"
)

// readerConn is a net.Conn whose reads come from a byte slice.
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

var respSeeds = []string{
	"*3\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n",
	"*1\r\n$4\r\nPING\r\n", "PING\r\n", "*0\r\n", "*-1\r\n", "$-1\r\n", "*99999999999999999999\r\n",
	"*2\r\n$999999999999\r\n", "*1\r\n*1\r\n*1\r\n$1\r\nx\r\n", "*1\r\n$-5\r\n", "*3\r\n$3\r\nSET\r\n",
	"\x00\xff\xfe*\r\n$\r\n", "\"unbalanced quote\r\n", "*1\r\n$4\r\nPINGxx\r\n", "*2\r\n:1\r\n+x\r\n",
}

// FuzzRESPReader runs arbitrary bytes through the protocol guard and
// redcon's parser: no panic, a bounded amount of work, and every parsed
// command's arguments fit the bulk limit.
func FuzzRESPReader(f *testing.F) {
	for _, s := range respSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const maxBulk = 1 << 10
		g := newGuardConn(readerConn{r: bytes.NewReader(in)}, maxBulk)
		rd := redcon.NewReader(g)
		for i := 0; i < len(in)+2; i++ {
			cmd, err := rd.ReadCommand()
			if err != nil {
				return
			}
			for _, a := range cmd.Args {
				if len(a) > maxBulk && !isInline(in) {
					t.Fatalf("argument of %d bytes passed a %d-byte limit", len(a), maxBulk)
				}
			}
		}
	})
}

// isInline reports whether the input has an inline (non-RESP) command,
// which the guard passes through untouched (redcon bounds inline lines).
func isInline(in []byte) bool {
	return bytes.IndexFunc(in, func(r rune) bool { return r != '*' && r != '$' }) >= 0
}

// FuzzCommand runs arbitrary argvs (NUL-separated) through command lookup,
// engine.Validate and engine.Exec on a populated engine: no panic, and a
// command Validate refuses is refused identically by Exec (the guarantee
// the log relies on: garbage never enters it).
func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		"XADD\x00s\x00*\x00f\x00v", "XADD\x00s\x00MAXLEN\x00~\x001\x00*\x00f\x00v", "XRANGE\x00s\x00-\x00+\x00COUNT\x00-1",
		"XREADGROUP\x00GROUP\x00g\x00c\x00STREAMS\x00s\x00>", "XGROUP\x00CREATE\x00s\x00g\x00$\x00MKSTREAM",
		"XTRIM\x00s\x00MINID\x0018446744073709551615-18446744073709551615", "XCLAIM\x00s\x00g\x00c\x00-1\x000-1",
		"XAUTOCLAIM\x00s\x00g\x00c\x000\x000\x00COUNT\x000", "XINFO\x00STREAM\x00s\x00FULL\x00COUNT\x00-5",
		"XSETID\x00s\x000-0\x00ENTRIESADDED\x00-1", "XPENDING\x00s\x00g\x00IDLE\x00-1\x00-\x00+\x0010",
		"XADD\x00s\x001-1\x00f", "XDEL\x00s\x00\xff", "SET\x00k\x00v", "RENAME\x00s\x00s",
	} {
		f.Add([]byte(s))
	}
	setup := [][][]byte{}
	for _, c := range [][]string{{"XADD", "s", "1-1", "f", "v"}, {"XADD", "s", "2-1", "f", "v"},
		{"XGROUP", "CREATE", "s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"},
		{"SET", "k", "v"}} {
		argv := make([][]byte, len(c))
		for i, x := range c {
			argv[i] = []byte(x)
		}
		setup = append(setup, argv)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || len(in) > 4096 {
			return
		}
		argv := bytes.Split(in, []byte{0})
		if _, er := lookup(argv); er != nil {
			return
		}
		e := engine.New(engine.DefaultConfig())
		for _, c := range setup {
			e.Exec(1000, c)
		}
		verr := engine.Validate(2000, argv)
		r := e.Exec(2000, argv)
		if verr != nil {
			if re, ok := r.(*engine.Error); !ok || re.Msg != verr.Msg {
				t.Fatalf("%q: Validate refused (%v) but Exec answered %#v", argv, verr, r)
			}
		}
	})
}
