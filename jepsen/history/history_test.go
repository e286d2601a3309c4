package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeClock returns 10, 20, 30, ... ns.
func fakeClock() func() int64 {
	var t int64
	return func() int64 { t += 10; return t }
}

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestWriterConcurrentRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const clients, each = 8, 50
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(p Process) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				v := fmt.Sprintf("%d-%d", p, i)
				inv := w.Invoke(p, XAdd, "s", &Value{Value: v})
				var err error
				switch i % 3 {
				case 1:
					err = context.DeadlineExceeded
				case 2:
					err = replyErr("MOVED 3999 127.0.0.1:7001")
				}
				w.Complete(inv, &Value{ID: fmt.Sprintf("%d-%d", i, p)}, err)
			}
		}(Process(c))
	}
	w.Nemesis(Start, "kill n1")
	wg.Wait()
	w.Nemesis(Heal, "")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(h), clients*each*2+2; got != want {
		t.Fatalf("events = %d, want %d", got, want)
	}
	ops := h.Ops()
	if len(ops) != clients*each {
		t.Fatalf("ops = %d", len(ops))
	}
	count := map[Type]int{}
	for _, o := range ops {
		count[o.Type]++
		if o.Value.Value == "" || o.Value.ID == "" {
			t.Fatalf("%v: input and result not merged: %+v", o, o.Value)
		}
		if o.Return < o.Call {
			t.Fatalf("%v returns before call", o)
		}
	}
	if count[OK] != clients*17 || count[Info] != clients*17 || count[Fail] != clients*16 {
		t.Fatalf("types = %v", count)
	}
	faults, heal := h.Faults()
	if len(faults) != 1 || faults[0].Fault != "kill n1" || heal < 0 || faults[0].End != heal {
		t.Fatalf("faults = %+v heal %d", faults, heal)
	}
}

func TestFormatIsDocumented(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriterClock(&buf, fakeClock())
	inv := w.Invoke(2, XRange, "s0", &Value{Full: true})
	w.Complete(inv, &Value{Full: true, Entries: []Entry{{"1-0", "a"}, {"2-0", "b"}}}, nil)
	w.Nemesis(Start, "partition n1|n2,n3")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := `{"index":0,"process":2,"type":"invoke","f":"xrange","key":"s0","value":{"full":true},"time":10}
{"index":1,"process":2,"type":"ok","f":"xrange","key":"s0","value":{"full":true,"entries":[["1-0","a"],["2-0","b"]]},"time":20}
{"index":2,"process":"nemesis","type":"info","f":"start","value":{"fault":"partition n1|n2,n3"},"time":30}
`
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want Type
	}{
		{nil, OK},
		{context.DeadlineExceeded, Info},
		{errors.New("read tcp: i/o timeout"), Info},
		{replyErr("ERR unknown outcome: leadership lost"), Info},
		{replyErr("MOVED 12 127.0.0.1:7000"), Fail},
		{fmt.Errorf("wrapped: %w", replyErr("TRYAGAIN")), Fail},
		{replyErr("NOGROUP No such key 's' or consumer group 'g'"), Fail},
		{Rejected(errors.New("dial refused")), Fail},
		{errors.New("MOVED 1 x:1"), Info}, // not a server reply: not proof
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	cases := map[string]string{
		"index order":   `{"index":1,"process":0,"type":"invoke","f":"xadd","time":1}` + "\n" + `{"index":1,"process":0,"type":"ok","f":"xadd","time":2}`,
		"time order":    `{"index":0,"process":0,"type":"invoke","f":"xadd","time":5}` + "\n" + `{"index":1,"process":0,"type":"ok","f":"xadd","time":2}`,
		"double invoke": `{"index":0,"process":0,"type":"invoke","f":"xadd","time":1}` + "\n" + `{"index":1,"process":0,"type":"invoke","f":"xadd","time":2}`,
		"orphan":        `{"index":0,"process":0,"type":"ok","f":"xadd","time":1}`,
		"mismatch":      `{"index":0,"process":0,"type":"invoke","f":"xadd","key":"a","time":1}` + "\n" + `{"index":1,"process":0,"type":"ok","f":"xadd","key":"b","time":2}`,
		"unknown f":     `{"index":0,"process":0,"type":"invoke","f":"get","time":1}`,
		"bad id":        `{"index":0,"process":0,"type":"invoke","f":"xadd","value":{"id":"x-1"},"time":1}`,
		"bad nemesis":   `{"index":0,"process":"nemesis","type":"ok","f":"start","time":1}`,
		"bad process":   `{"index":0,"process":"n2","type":"invoke","f":"xadd","time":1}`,
		"unknown field": `{"index":0,"process":0,"type":"invoke","f":"xadd","time":1,"extra":1}`,
	}
	for name, in := range cases {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestUncompletedIsInfo(t *testing.T) {
	in := `{"index":0,"process":3,"type":"invoke","f":"xadd","key":"s","value":{"value":"v"},"time":1}`
	h, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	ops := h.Ops()
	if len(ops) != 1 || ops[0].Type != Info || ops[0].Return != math.MaxInt64 || ops[0].Done != -1 {
		t.Fatalf("ops = %+v", ops)
	}
}

func TestFaultAfterHealReopens(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriterClock(&buf, fakeClock())
	w.Nemesis(Start, "a")
	w.Nemesis(Heal, "")
	w.Nemesis(Start, "b")
	w.Nemesis(Stop, "b")
	_ = w.Close()
	h, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	f, heal := h.Faults()
	if heal != -1 || len(f) != 2 || f[0].End != 20 || f[1].Start != 30 || f[1].End != 40 {
		t.Fatalf("faults %+v heal %d", f, heal)
	}
}

func TestIDOrder(t *testing.T) {
	if !MustID("1-9").Less(MustID("2-0")) || !MustID("5-1").Less(MustID("5-2")) || MustID("5").Compare(MustID("5-0")) != 0 {
		t.Fatal("ID order wrong")
	}
	if _, err := ParseID("1-"); err == nil {
		t.Fatal("accepted 1-")
	}
}

func TestWriteErrorSticks(t *testing.T) {
	w := NewWriterClock(failWriter{}, fakeClock())
	w.Invoke(0, XAdd, "s", nil)
	if err := w.Close(); err == nil {
		t.Fatal("Close hid the write error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
