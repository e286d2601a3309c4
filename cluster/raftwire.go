package cluster

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// The raft bus's wire format (raftbus.go). A connection carries frames:
//
//	[u32 n][u8 kind][u32 group][u64 call] body      n = 13 + len(body)
//
// little-endian; group is the shard number, call the sender's call ID
// (echoed by the response). Kinds and bodies, every integer a uvarint and
// every byte string a uvarint length then the bytes:
//
//	frameAppend     header, term, leader, prevLogEntry, prevLogTerm,
//	                leaderCommitIndex, n entries {index, term, type (1 byte),
//	                appendedAt (unix ns, 0 = zero time), data, extensions}
//	frameAppendOK   header, term, lastLog, flags (1 byte: 1 success,
//	                2 noRetryBackoff)
//	frameError      the error's text
//
// where header is protocolVersion, id, addr (raft.RPCHeader). Every field of
// raft's AppendEntriesRequest and AppendEntriesResponse is carried, so raft
// sees exactly what it sent. A decoder never panics and bounds every count
// by the bytes left (FuzzRaftWire).
const (
	frameAppend   byte = 1
	frameAppendOK byte = 2
	frameError    byte = 3
)

// frameHeaderLen is the bytes before a frame's body, the length included.
const frameHeaderLen = 4 + 1 + 4 + 8

// maxFrame bounds a frame's length: MaxAppendEntries entries of up to
// fsm's MaxBatchBytes each, with room to spare.
const maxFrame = 1 << 30

var errBadFrame = errors.New("cluster: malformed raft bus frame")

// beginFrame appends a frame header whose length is filled in by endFrame.
func beginFrame(b []byte, kind byte, group uint32, call uint64) ([]byte, int) {
	start := len(b)
	b = append(b, 0, 0, 0, 0, kind)
	b = binary.LittleEndian.AppendUint32(b, group)
	b = binary.LittleEndian.AppendUint64(b, call)
	return b, start
}

func endFrame(b []byte, start int) []byte {
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeader(b []byte, h *raft.RPCHeader) []byte {
	b = binary.AppendUvarint(b, uint64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	return appendBytes(b, h.Addr)
}

// appendAppendRequest appends req's frame to b.
func appendAppendRequest(b []byte, group uint32, call uint64, req *raft.AppendEntriesRequest) []byte {
	b, start := beginFrame(b, frameAppend, group, call)
	b = appendHeader(b, &req.RPCHeader)
	b = binary.AppendUvarint(b, req.Term)
	b = appendBytes(b, req.Leader)
	b = binary.AppendUvarint(b, req.PrevLogEntry)
	b = binary.AppendUvarint(b, req.PrevLogTerm)
	b = binary.AppendUvarint(b, req.LeaderCommitIndex)
	b = binary.AppendUvarint(b, uint64(len(req.Entries)))
	for _, e := range req.Entries {
		b = binary.AppendUvarint(b, e.Index)
		b = binary.AppendUvarint(b, e.Term)
		b = append(b, byte(e.Type))
		var at int64
		if !e.AppendedAt.IsZero() {
			at = e.AppendedAt.UnixNano()
		}
		b = binary.AppendUvarint(b, uint64(at))
		b = appendBytes(b, e.Data)
		b = appendBytes(b, e.Extensions)
	}
	return endFrame(b, start)
}

// appendAppendResponse appends resp's frame to b.
func appendAppendResponse(b []byte, group uint32, call uint64, resp *raft.AppendEntriesResponse) []byte {
	b, start := beginFrame(b, frameAppendOK, group, call)
	b = appendHeader(b, &resp.RPCHeader)
	b = binary.AppendUvarint(b, resp.Term)
	b = binary.AppendUvarint(b, resp.LastLog)
	var flags byte
	if resp.Success {
		flags |= 1
	}
	if resp.NoRetryBackoff {
		flags |= 2
	}
	return endFrame(append(b, flags), start)
}

// appendError appends an error frame to b.
func appendError(b []byte, group uint32, call uint64, msg string) []byte {
	b, start := beginFrame(b, frameError, group, call)
	return endFrame(append(b, msg...), start)
}

// wireReader decodes a frame body. Byte strings alias the body.
type wireReader struct {
	b   []byte
	bad bool
}

func (r *wireReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// bytes returns the next byte string, nil when empty.
func (r *wireReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	if n == 0 {
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *wireReader) header(h *raft.RPCHeader) {
	h.ProtocolVersion = raft.ProtocolVersion(r.uvarint())
	h.ID = r.bytes()
	h.Addr = r.bytes()
}

// decodeAppendRequest decodes a frameAppend body. Entries' Data and
// Extensions alias body, which must not be reused.
func decodeAppendRequest(body []byte) (*raft.AppendEntriesRequest, error) {
	r := wireReader{b: body}
	req := &raft.AppendEntriesRequest{}
	r.header(&req.RPCHeader)
	req.Term = r.uvarint()
	req.Leader = r.bytes()
	req.PrevLogEntry = r.uvarint()
	req.PrevLogTerm = r.uvarint()
	req.LeaderCommitIndex = r.uvarint()
	n := r.uvarint()
	// An entry takes at least 6 bytes: a count past that is a lie.
	if r.bad || n > uint64(len(r.b))/6 {
		return nil, errBadFrame
	}
	if n > 0 {
		logs := make([]raft.Log, n)
		req.Entries = make([]*raft.Log, n)
		for i := range logs {
			e := &logs[i]
			e.Index = r.uvarint()
			e.Term = r.uvarint()
			e.Type = raft.LogType(r.byte())
			if at := int64(r.uvarint()); at != 0 {
				e.AppendedAt = time.Unix(0, at)
			}
			e.Data = r.bytes()
			e.Extensions = r.bytes()
			req.Entries[i] = e
		}
	}
	if r.bad || len(r.b) != 0 {
		return nil, errBadFrame
	}
	return req, nil
}

// decodeAppendResponse decodes a frameAppendOK body into resp. The
// header's byte strings are copied (or taken from in, which holds the last
// ones seen: a connection's responses all come from the same server), since
// body may be reused.
func decodeAppendResponse(body []byte, resp *raft.AppendEntriesResponse, in *interned) error {
	r := wireReader{b: body}
	r.header(&resp.RPCHeader)
	resp.Term = r.uvarint()
	resp.LastLog = r.uvarint()
	flags := r.byte()
	resp.Success = flags&1 != 0
	resp.NoRetryBackoff = flags&2 != 0
	if r.bad || len(r.b) != 0 || flags&^3 != 0 {
		return errBadFrame
	}
	resp.ID, resp.Addr = in.get(&in.id, resp.ID), in.get(&in.addr, resp.Addr)
	return nil
}

// interned keeps a copy of the last byte strings decoded for a field, so a
// stream of equal ones allocates once. Never modify what get returns.
type interned struct{ id, addr []byte }

func (in *interned) get(last *[]byte, b []byte) []byte {
	if b == nil {
		return nil
	}
	if string(*last) != string(b) {
		*last = append([]byte(nil), b...)
	}
	return *last
}
