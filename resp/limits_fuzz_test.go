package resp

import (
	"bytes"
	"testing"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

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
		if _, er := command.Lookup(argv); er != nil {
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
