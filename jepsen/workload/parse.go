package workload

import (
	"fmt"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Reply parsing for RESP2 replies as go-redis returns them from Do: bulk
// strings as string, integers as int64, arrays as []any, nil as nil.

func str(r any) (string, error) {
	if s, ok := r.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("want a bulk string, got %T", r)
}

// entries parses an XRANGE-style array of [id, [field, value]].
func entries(r any) ([]history.Entry, error) {
	if r == nil {
		return nil, nil
	}
	a, ok := r.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array of entries, got %T", r)
	}
	var es []history.Entry
	for _, x := range a {
		e, ok := x.([]any)
		if !ok || len(e) != 2 {
			return nil, fmt.Errorf("want [id, fields], got %v", x)
		}
		id, err := str(e[0])
		if err != nil {
			return nil, err
		}
		fv, _ := e[1].([]any)
		val := ""
		if len(fv) == 2 {
			val, _ = fv[1].(string)
		}
		es = append(es, history.Entry{ID: id, Value: val})
	}
	return es, nil
}

// streamEntries parses an XREAD/XREADGROUP reply [[key, entries]] for key.
func streamEntries(r any, key string) ([]history.Entry, error) {
	if r == nil {
		return nil, nil
	}
	a, ok := r.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array of streams, got %T", r)
	}
	for _, x := range a {
		kv, ok := x.([]any)
		if !ok || len(kv) != 2 {
			return nil, fmt.Errorf("want [key, entries], got %v", x)
		}
		if k, _ := kv[0].(string); k == key {
			return entries(kv[1])
		}
	}
	return nil, nil
}

// autoclaim parses [next, entries, deleted].
func autoclaim(r any) (next string, es []history.Entry, deleted []string, err error) {
	a, ok := r.([]any)
	if !ok || len(a) < 2 {
		return "", nil, nil, fmt.Errorf("want [next, entries, deleted], got %v", r)
	}
	if next, err = str(a[0]); err != nil {
		return "", nil, nil, err
	}
	if es, err = entries(a[1]); err != nil {
		return "", nil, nil, err
	}
	if len(a) > 2 {
		d, _ := a[2].([]any)
		for _, x := range d {
			s, err := str(x)
			if err != nil {
				return "", nil, nil, err
			}
			deleted = append(deleted, s)
		}
	}
	return next, es, deleted, nil
}

// pending parses the extended XPENDING reply [[id, consumer, idle, deliveries]].
func pending(r any) ([]history.Pending, error) {
	if r == nil {
		return nil, nil
	}
	a, ok := r.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array, got %T", r)
	}
	var ps []history.Pending
	for _, x := range a {
		p, ok := x.([]any)
		if !ok || len(p) != 4 {
			return nil, fmt.Errorf("want [id, consumer, idle, deliveries], got %v", x)
		}
		id, err := str(p[0])
		if err != nil {
			return nil, err
		}
		c, _ := p[1].(string)
		n, _ := p[3].(int64)
		ps = append(ps, history.Pending{ID: id, Consumer: c, Deliveries: int(n)})
	}
	return ps, nil
}
