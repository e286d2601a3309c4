package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// tutorialSteps are the Redis Streams tutorial's examples (the seed
// tutorial), with explicit IDs where the tutorial uses * so that the output
// is deterministic. Each step is run with redis-cli against raftstream and
// against redis-server, and the printed outputs must be identical.
var tutorialSteps = []string{
	// Example 1: XADD / XLEN / XRANGE
	`XADD orders:stream 1699999999999-0 customer alice amount 49.99`,
	`XADD orders:stream 1699999999999-1 customer bob amount 12.50`,
	`XLEN orders:stream`,
	`XRANGE orders:stream - +`,
	// Example 2: XREAD COUNT STREAMS
	`XADD sensors:stream 1700000000000-0 device temp-1 reading 21.5`,
	`XADD sensors:stream 1700000000000-1 device temp-1 reading 21.7`,
	`XREAD COUNT 10 STREAMS sensors:stream 0`,
	// Example 3: consumer group with explicit IDs
	`XADD notifications:stream 1-1 type email to user:42`,
	`XADD notifications:stream 2-1 type sms to user:77`,
	`XGROUP CREATE notifications:stream workers 0`,
	`XREADGROUP GROUP workers worker-1 COUNT 10 STREAMS notifications:stream >`,
	`XPENDING notifications:stream workers`,
	`XACK notifications:stream workers 1-1`,
	`XPENDING notifications:stream workers`,
	// Example 4: trimming
	`XADD metrics:stream 1-0 cpu 42`,
	`XADD metrics:stream 2-0 cpu 55`,
	`XADD metrics:stream 3-0 cpu 61`,
	`XTRIM metrics:stream MAXLEN 2`,
	`XLEN metrics:stream`,
	// Mistake 1: XREAD does not remember the position
	`XADD tasks:stream 1-0 job resize-image`,
	`XREAD COUNT 10 STREAMS tasks:stream 0`,
	`XREAD COUNT 10 STREAMS tasks:stream 0`,
	// Mistake 2: WRONGTYPE
	`SET session:abc123 active`,
	`XADD session:abc123 * field value`,
}

func redisCLI(t *testing.T, addr string, args ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	full := append([]string{"-h", host, "-p", port, "--no-raw"}, args...)
	out, err := exec.Command("redis-cli", full...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestTutorialWithRedisCLI(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not installed (apt-get install redis-tools): %v", err)
	}
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	for _, step := range tutorialSteps {
		args := strings.Fields(step)
		got, want := redisCLI(t, rs.Addr, args...), redisCLI(t, redis, args...)
		if got != want {
			t.Errorf("%s\n raftstream:\n%s\n redis-server:\n%s", step, got, want)
		}
	}
}
