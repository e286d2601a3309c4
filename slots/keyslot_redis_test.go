package slots_test

import (
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// TestKeyslotMatchesRedis compares Of with CLUSTER KEYSLOT of a real
// redis-server in cluster mode for random keys, including keys built around
// braces so the hash-tag rule is exercised.
func TestKeyslotMatchesRedis(t *testing.T) {
	dir := t.TempDir()
	addr := testkit.StartRedis(t, "--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"))
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	seed := uint64(20261202)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	alphabet := []byte("ab{}{}xyz:0189\x00\xff")
	const n = 3000
	keys := make([]string, n)
	for i := range keys {
		b := make([]byte, r.IntN(12))
		for j := range b {
			if r.IntN(3) == 0 {
				b[j] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[j] = byte(r.IntN(256))
			}
		}
		keys[i] = string(b)
	}
	// Pipeline in chunks to keep the test fast.
	for off := 0; off < n; off += 500 {
		end := min(off+500, n)
		for _, k := range keys[off:end] {
			if err := c.Send("CLUSTER", "KEYSLOT", k); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keys[off:end] {
			raw, err := c.ReadReply()
			if err != nil {
				t.Fatal(err)
			}
			s := string(raw)
			if !strings.HasPrefix(s, ":") {
				t.Fatalf("CLUSTER KEYSLOT %q: %q", k, s)
			}
			want, _ := strconv.Atoi(strings.TrimSpace(s[1:]))
			if got := slots.OfString(k); got != want {
				t.Fatalf("Of(%q) = %d, redis says %d", k, got, want)
			}
		}
	}
}
