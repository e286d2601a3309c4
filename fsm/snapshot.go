package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
)

// Snapshot format, version 2 (the payload of raft's snapshot file; raft's
// file store adds its own CRC-64 over the whole payload):
//
//	snapshot = magic:"rsfsm"  version:u8  lastNow:uvarint  shard:uvarint
//	           nodeMaxBytes:uvarint  nodeMaxEntries:uvarint  migration  engine
//
// migration is the shard's slot-move state (migrate.go, appendMigration);
// version 1 has none (a shard that never took part in a move). Both are
// read; testdata/snapshot_v*.golden pin the encodings.
//
// engine is (*engine.Snapshot).WriteTo's output, read back by
// engine.Restore, and runs to the end of the snapshot. The engine
// configuration is stored here as well because CONFIG SET replicates it
// through the log; it is applied after engine.Restore.

const (
	snapshotMagic   = "rsfsm"
	snapshotVersion = 2
)

// snapshotHeader is the FSM-level state saved with each snapshot.
type snapshotHeader struct {
	LastNow   int64
	Shard     int
	Engine    engine.Config
	Migration *migration
}

func (h *snapshotHeader) appendTo(dst []byte) []byte {
	dst = append(dst, snapshotMagic...)
	dst = append(dst, snapshotVersion)
	dst = binary.AppendUvarint(dst, uint64(h.LastNow))
	dst = binary.AppendUvarint(dst, uint64(h.Shard))
	dst = binary.AppendUvarint(dst, uint64(h.Engine.NodeMaxBytes))
	dst = binary.AppendUvarint(dst, uint64(h.Engine.NodeMaxEntries))
	return appendMigration(dst, h.Migration)
}

// engineSnapshot is the part of *engine.Snapshot the FSM uses.
type engineSnapshot interface {
	WriteTo(w io.Writer) (int64, error)
}

// fsmSnapshot is a raft.FSMSnapshot: header plus the engine's view.
type fsmSnapshot struct {
	hdr  snapshotHeader
	eng  engineSnapshot
	save *pendingSave // nil in tests that build one by hand
}

// writeTo writes the whole snapshot payload.
func (s *fsmSnapshot) writeTo(w io.Writer) error {
	if _, err := w.Write(s.hdr.appendTo(nil)); err != nil {
		return err
	}
	_, err := s.eng.WriteTo(w)
	return err
}

// Persist implements raft.FSMSnapshot; it may run concurrently with Apply.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	bw := bufio.NewWriterSize(sink, 64<<10)
	err := s.writeTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		_ = sink.Cancel()
		s.save.persisted(err)
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	err = sink.Close()
	s.save.persisted(err)
	return err
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() { s.save.release() }

var errBadSnapshot = errors.New("fsm: bad snapshot")

// readSnapshot decodes a snapshot payload into a fresh engine.
func readSnapshot(r io.Reader) (snapshotHeader, *engine.Engine, error) {
	var h snapshotHeader
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(snapshotMagic)+1)
	if _, err := io.ReadFull(br, magic); err != nil {
		return h, nil, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	if string(magic[:len(snapshotMagic)]) != snapshotMagic {
		return h, nil, fmt.Errorf("%w: magic %q", errBadSnapshot, magic[:len(snapshotMagic)])
	}
	version := magic[len(snapshotMagic)]
	if version != 1 && version != snapshotVersion {
		return h, nil, fmt.Errorf("%w: version %d", errBadSnapshot, version)
	}
	var vals [4]uint64
	for i := range vals {
		v, err := binary.ReadUvarint(br)
		if err != nil || v > 1<<62 {
			return h, nil, fmt.Errorf("%w: header field %d: %v", errBadSnapshot, i, err)
		}
		vals[i] = v
	}
	h.LastNow, h.Shard = int64(vals[0]), int(vals[1])
	h.Engine = engine.Config{NodeMaxBytes: int(vals[2]), NodeMaxEntries: int(vals[3])}
	if version >= 2 {
		mg, err := readMigration(br)
		if err != nil {
			return h, nil, fmt.Errorf("%w: %v", errBadSnapshot, err)
		}
		h.Migration = mg
	}
	eng, err := restoreEngine(br)
	if err != nil {
		return h, nil, fmt.Errorf("%w: engine: %v", errBadSnapshot, err)
	}
	// The engine snapshot carries the whole engine.Config (including the
	// IDMP settings the header predates), so the header's copy is only a
	// record: applying it here would reset the newer fields.
	return h, eng, nil
}
