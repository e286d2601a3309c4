package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftstream/raftstream/cmd/raftstream/backupfile"
	"github.com/raftstream/raftstream/slots"
)

// progressHook is a backup's progress output that runs fn, once, when a
// line containing at appears, before the backup goes on.
type progressHook struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	at   string
	fn   func()
	done bool
}

func (p *progressHook) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	if !p.done && bytes.Contains(b, []byte(p.at)) {
		p.done = true
		p.fn()
	}
	return len(b), nil
}

// TestBackupStartsAgainWhenSlotsMove: a slot moves between the cuts of
// two shards of a backup (once shard 0 is copied, a move into or out of
// it runs to its end before the copy goes on). The backup drops that pass and
// starts again, and the file it completes covers every slot once, the
// moved slot in its new shard, with the moved key's entries in that
// shard's part (a restore brings them back).
func TestBackupStartsAgainWhenSlotsMove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := startCluster(t, 3, 3)
	addrs := addrsOf(src)
	c := clusterClient(t, addrs...)
	const key = "moved:{k}"
	for i := range 100 {
		if err := c.Do(ctx, "XADD", key, "*", "n", i).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, "XADD", fmt.Sprintf("other:%d", i), "*", "n", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot := slots.OfString(key)
	owner, _, _, err := slotMapOf(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	from := owner[slot]
	// The move crosses the cut made after shard 0 is copied: from shard 0
	// (copied with the slot) to one copied later, which also has it, or to
	// shard 0 (copied without it) from one copied later, which no longer
	// has it. Without a new pass the slot is in two shards, or in none.
	to := 0
	if from == 0 {
		to = 1
	}
	moved := false
	progress := &progressHook{at: "backup: shard 1/", fn: func() {
		if _, err := moveSlot(addrs[0], slot, to); err != nil {
			t.Errorf("move slot %d to shard %d: %v", slot, to, err)
			return
		}
		if err := waitSlotOwner(ctx, addrs, slot, to); err != nil {
			t.Errorf("slot %d to shard %d: %v", slot, to, err)
			return
		}
		moved = true
	}}
	file := filepath.Join(t.TempDir(), "moving.rsbk")
	res, err := runBackup(ctx, backupConfig{addr: addrs[1], out: file, timeout: 30 * time.Second,
		shardTimeout: time.Minute, progress: progress})
	out := progress.buf.String()
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if !moved {
		t.Fatalf("the slot did not move during the backup:\n%s", out)
	}
	if !strings.Contains(out, "backup: slots moved while it ran (") {
		t.Fatalf("the backup did not start again after the move:\n%s", out)
	}
	b, err := backupfile.Open(file)
	if err != nil {
		t.Fatalf("the backup written: %v", err)
	}
	defer b.Close()
	if len(res.manifest.Shards) != 3 {
		t.Fatalf("%d shards in the manifest, want 3", len(res.manifest.Shards))
	}
	for _, s := range b.Manifest.Shards {
		for _, r := range s.Slots {
			if r[0] <= slot && slot <= r[1] && s.Shard != to {
				t.Fatalf("slot %d is in shard %d of the backup, want %d (where it moved)", slot, s.Shard, to)
			}
		}
	}

	dst := startNode(t, "")
	rout := mustRun(t, restoreCmd, "--in", file, "--to", dst.Addr)
	t.Logf("%s", rout)
	if n, err := plainClient(t, dst.Addr).XLen(ctx, key).Result(); err != nil || n != 100 {
		t.Fatalf("XLEN %s after the restore: %d (%v), want 100", key, n, err)
	}
}
