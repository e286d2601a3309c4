package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// metaFile is the node's identity file inside Config.Dir.
const metaFile = "node.json"

// metaVersion is the format of node.json this build writes. Version 1 has
// no slot map in Members (its cluster routes by contiguous ranges over its
// shards); version 2 may carry the replicated slot map (Members.Slots).
// Both are read; a file is rewritten as version 2 the next time it is
// saved, with the same content otherwise, and a newer version is refused
// rather than misread.
const metaVersion = 2

// meta is what a node persists about itself. ID and Shards are written once
// when the data dir is created and never change. Members is the formed
// cluster (nil until formation completes); once set it is only rewritten
// with the same ID and shard count.
type meta struct {
	// Version of this file's format.
	Version int `json:"version"`
	// ID is the node ID: 40 lowercase hex chars, random, never reused.
	// Invariant: a data dir keeps its ID for life; a wiped dir gets a new one.
	ID string `json:"id"`
	// Shards is the cluster's shard count at creation (what formation
	// places); shards added or retired later are in Members.
	Shards int `json:"shards"`
	// Members is the cluster as formed: nodes sorted by ID and each shard's
	// replicas. Nil before formation.
	Members *Membership `json:"members,omitempty"`
}

// newNodeID returns 40 random hex chars (160 bits, like Redis Cluster IDs).
func newNodeID() (string, error) {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// validNodeID reports whether id is 40 lowercase hex chars.
func validNodeID(id string) bool {
	if len(id) != 40 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// loadOrCreateMeta reads dir/node.json, or creates it with a fresh ID and
// shard count `shards` when dir has none. A non-zero shards that differs
// from the persisted count is an error.
func loadOrCreateMeta(dir string, shards int) (meta, bool, error) {
	p := filepath.Join(dir, metaFile)
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		var m meta
		if err := json.Unmarshal(b, &m); err != nil {
			return meta{}, false, fmt.Errorf("cluster: %s: %w", p, err)
		}
		if m.Version > metaVersion {
			return meta{}, false, fmt.Errorf("cluster: %s is version %d; this build reads up to %d", p, m.Version, metaVersion)
		}
		if !validNodeID(m.ID) || m.Shards < 1 {
			return meta{}, false, fmt.Errorf("cluster: %s: bad id %q or shard count %d", p, m.ID, m.Shards)
		}
		if shards != 0 && shards != m.Shards {
			return meta{}, false, fmt.Errorf("cluster: data dir %s was created with %d shards, not %d (the shard count is fixed at creation)", dir, m.Shards, shards)
		}
		return m, false, nil
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return meta{}, false, err
		}
		// A data dir with shard data but no identity is a damaged node:
		// refuse rather than invent a new identity over old Raft state.
		if _, err := os.Stat(filepath.Join(dir, "shards")); err == nil {
			return meta{}, false, fmt.Errorf("cluster: %s has shard data but no %s; refusing to start", dir, metaFile)
		}
		id, err := newNodeID()
		if err != nil {
			return meta{}, false, err
		}
		m := meta{Version: metaVersion, ID: id, Shards: shards}
		return m, true, nil
	default:
		return meta{}, false, err
	}
}

// saveMeta writes m to dir/node.json atomically (temp file, fsync, rename,
// fsync dir).
func saveMeta(dir string, m meta) error {
	m.Version = metaVersion
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, metaFile)
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
