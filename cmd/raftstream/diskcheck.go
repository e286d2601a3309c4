package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// verifyDataDir checks every Raft log store (raft.db) under dir before the
// node opens it: a truncated or corrupted file stops the node with a
// message naming the file, instead of a bbolt panic deep in startup or,
// worse, a node serving from a damaged log. The check is read-only and
// proportional to the files' size.
func verifyDataDir(dir string) error {
	var bad []error
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a new node
			}
			return err
		}
		if d.IsDir() || d.Name() != "raft.db" {
			return nil
		}
		if err := checkBolt(p); err != nil {
			bad = append(bad, fmt.Errorf("%s: %w", p, err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("corrupt Raft log store; refusing to start (restore the file from a backup, or remove that group's directory so that it is re-replicated from its peers): %w", errors.Join(bad...))
	}
	return nil
}

// checkBolt opens a bbolt file read-only and runs its consistency check,
// turning bbolt's panics on damaged pages into errors.
func checkBolt(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("damaged page: %v", r)
		}
	}()
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return errors.New("empty file")
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	// Walk every bucket, key and value: every branch, leaf and overflow
	// page is read (bbolt asserts each page's identity on the way; Tx.Check
	// runs in a goroutine of its own, where its panics cannot be caught).
	return db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walkBucket(b, 0) })
	})
}

func walkBucket(b *bolt.Bucket, depth int) error {
	if depth > 16 {
		return errors.New("buckets nested too deep")
	}
	c := b.Cursor()
	var sum byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				if err := walkBucket(nb, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if len(v) > 0 {
			sum ^= v[0] ^ v[len(v)-1]
		}
	}
	_ = sum
	return nil
}
