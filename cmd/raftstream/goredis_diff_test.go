package main

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestGoRedisDiff runs a consumer-group workflow through go-redis against
// raftstream and redis-server, over RESP2 and RESP3 (go-redis negotiates
// with HELLO), and compares the decoded results.
func TestGoRedisDiff(t *testing.T) {
	rs := startNode(t, "")
	redisAddr := testkit.StartRedis(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			var results [2][]any
			for i, addr := range []string{rs.Addr, redisAddr} {
				c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
				key := fmt.Sprint("gr", proto)
				var out []any
				rec := func(v any, err error) { out = append(out, v, fmt.Sprint(err)) }
				for n := 1; n <= 5; n++ {
					rec(c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-1", n), Values: []string{"n", fmt.Sprint(n)}}).Result())
				}
				rec(c.XGroupCreate(ctx, key, "g", "0").Result())
				rec(c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "a", Streams: []string{key, ">"}, Count: 3}).Result())
				rec(c.XAck(ctx, key, "g", "1-1", "2-1").Result())
				p, err := c.XPending(ctx, key, "g").Result()
				rec(p, err)
				rec(c.XRange(ctx, key, "2-1", "+").Result())
				rec(c.XRead(ctx, &redis.XReadArgs{Streams: []string{key, "3-1"}, Count: 10}).Result())
				info, err := c.XInfoStream(ctx, key).Result()
				if i == 0 && info != nil {
					// Redis 8.6's IDMP fields, which redis-server 7.0 lacks
					// (their values are tested in the Redis-8 tests): our
					// defaults, then zeroed for the comparison.
					if info.IDMPDuration != 100 || info.IDMPMaxSize != 100 || info.PIDsTracked != 0 ||
						info.IIDsTracked != 0 || info.IIDsAdded != 0 || info.IIDsDuplicates != 0 {
						t.Errorf("XINFO STREAM IDMP fields %+v, want the defaults 100/100 and no producers", info)
					}
					info.IDMPDuration, info.IDMPMaxSize = 0, 0
				}
				rec(info, err)
				rec(c.XInfoGroups(ctx, key).Result())
				rec(c.XLen(ctx, key).Result())
				rec(c.Type(ctx, key).Result())
				rec(c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "1-1", Values: []string{"x", "y"}}).Result())
				rec(c.Do(ctx, "NOSUCH", "x").Result())
				pipe := c.Pipeline()
				a := pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "9-1", Values: []string{"p", "1"}})
				b := pipe.XLen(ctx, key)
				d := pipe.XDel(ctx, key, "9-1")
				_, err = pipe.Exec(ctx)
				rec(fmt.Sprint(a.Val(), b.Val(), d.Val()), err)
				tx := c.TxPipeline()
				e := tx.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "10-1", Values: []string{"t", "1"}})
				f := tx.XLen(ctx, key)
				_, err = tx.Exec(ctx)
				rec(fmt.Sprint(e.Val(), f.Val()), err)
				c.Close()
				results[i] = out
			}
			for j := range results[0] {
				if !reflect.DeepEqual(results[0][j], results[1][j]) {
					t.Errorf("result %d:\n raftstream %#v\n redis      %#v", j, results[0][j], results[1][j])
				}
			}
		})
	}
}
