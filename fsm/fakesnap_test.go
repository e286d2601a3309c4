//go:build !enginesnap

package fsm

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/raftstream/raftstream/engine"
)

// Until engine snapshots land, tests stand in an engine snapshot holding the
// engine configuration only (all the state the test commands drive).
func init() {
	snapshotEngine = func(e *engine.Engine) (engineSnapshot, error) { return fakeSnap(e.Config()), nil }
	restoreEngine = func(r io.Reader) (*engine.Engine, error) {
		br, ok := r.(io.ByteReader)
		if !ok {
			br = bufio.NewReader(r)
		}
		var magic [4]byte
		for i := range magic {
			b, err := br.ReadByte()
			if err != nil {
				return nil, err
			}
			magic[i] = b
		}
		if string(magic[:]) != "FAKE" {
			return nil, fmt.Errorf("fake snapshot: magic %q", magic)
		}
		mb, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		me, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		return engine.New(engine.Config{NodeMaxBytes: int(mb), NodeMaxEntries: int(me)}), nil
	}
}

type fakeSnap engine.Config

func (f fakeSnap) WriteTo(w io.Writer) (int64, error) {
	b := []byte("FAKE")
	b = binary.AppendUvarint(b, uint64(f.NodeMaxBytes))
	b = binary.AppendUvarint(b, uint64(f.NodeMaxEntries))
	n, err := w.Write(b)
	return int64(n), err
}
