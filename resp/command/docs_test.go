package command_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/command"
	"github.com/raftstream/raftstream/resp/wire"
)

var rewrite = flag.Bool("rewrite", false, "rewrite docs/redis70.json from redis-server's COMMAND DOCS")

// pairs walks a decoded RESP3 map (wire.Parse gives key, value, ...).
func pairs(t *testing.T, v any, fn func(k string, v any)) {
	t.Helper()
	kv, ok := v.([]any)
	if !ok || len(kv)%2 != 0 {
		t.Fatalf("not a map: %#v", v)
	}
	for i := 0; i < len(kv); i += 2 {
		fn(kv[i].(string), kv[i+1])
	}
}

func strings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func decodeArgs(t *testing.T, v any) []command.Arg {
	var out []command.Arg
	for _, a := range v.([]any) {
		var arg command.Arg
		pairs(t, a, func(k string, v any) {
			switch k {
			case "name":
				arg.Name = v.(string)
			case "type":
				arg.Type = v.(string)
			case "key_spec_index":
				n := int(v.(int64))
				arg.KeySpecIndex = &n
			case "token":
				tok := v.(string)
				arg.Token = &tok
			case "summary":
				arg.Summary = v.(string)
			case "since":
				arg.Since = v.(string)
			case "deprecated_since":
				arg.DeprecatedSince = v.(string)
			case "flags":
				arg.Flags = strings(v)
			case "arguments":
				arg.Arguments = decodeArgs(t, v)
			default:
				t.Fatalf("argument field %q: add it to command.Arg", k)
			}
		})
		out = append(out, arg)
	}
	return out
}

// TestDocsAreRedis70 holds docs/redis70.json to redis-server 7.0's COMMAND
// DOCS, row by row, and the rows' summary, since and group to the same
// reply. With -rewrite it writes the file instead of comparing.
func TestDocsAreRedis70(t *testing.T) {
	c, err := testkit.Dial(testkit.StartRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do("HELLO", "3"); err != nil {
		t.Fatal(err)
	}
	added, _ := command.DocFiles.ReadFile(command.DocsAdded)
	addedDocs, err := command.ParseDocs(added)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]*command.Doc{}
	for _, cmd := range command.All() {
		raw, err := c.Do("COMMAND", "DOCS", cmd.Name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := wire.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.([]any)) == 0 {
			if addedDocs[cmd.Name] == nil {
				t.Errorf("%s: Redis 7.0 lacks it and %s has no docs for it", cmd.Name, command.DocsAdded)
			}
			continue
		}
		if addedDocs[cmd.Name] != nil {
			t.Errorf("%s: Redis 7.0 has it: its docs are Redis's, not %s's", cmd.Name, command.DocsAdded)
		}
		d := &command.Doc{}
		pairs(t, v.([]any)[1], func(k string, v any) {
			switch k {
			case "summary", "since", "group":
				row := map[string]string{"summary": cmd.Summary, "since": cmd.Since, "group": cmd.Group}[k]
				if row != v.(string) {
					t.Errorf("%s: the row's %s is %q, Redis 7.0's %q", cmd.Name, k, row, v)
				}
			case "complexity":
				d.Complexity = v.(string)
			case "doc_flags":
				d.DocFlags = strings(v)
			case "deprecated_since":
				d.DeprecatedSince = v.(string)
			case "replaced_by":
				d.ReplacedBy = v.(string)
			case "history":
				for _, h := range v.([]any) {
					e := strings(h)
					d.History = append(d.History, [2]string{e[0], e[1]})
				}
			case "arguments":
				d.Arguments = decodeArgs(t, v)
			case "subcommands":
				// Each subcommand is a row of its own.
			default:
				t.Fatalf("%s: docs field %q: add it to command.Doc", cmd.Name, k)
			}
		})
		docs[cmd.Name] = d
	}
	want, err := json.MarshalIndent(docs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *rewrite {
		if err := os.WriteFile(command.DocsRedis70, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, _ := command.DocFiles.ReadFile(command.DocsRedis70)
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not redis-server's COMMAND DOCS: run go test ./resp/command -run TestDocsAreRedis70 -rewrite", command.DocsRedis70)
	}
}

// TestEveryRowHasDocs: every row of the table has its docs, in one of the
// data files, and every doc in them is a row's.
func TestEveryRowHasDocs(t *testing.T) {
	seen := map[string]string{}
	for _, file := range []string{command.DocsRedis70, command.DocsAdded} {
		b, _ := command.DocFiles.ReadFile(file)
		docs, err := command.ParseDocs(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for name := range docs {
			if c := command.Get(name); c == nil || c.Name != name {
				t.Errorf("%s documents %q, which is not a row of the table", file, name)
			}
			if prev, dup := seen[name]; dup {
				t.Errorf("%q is documented in %s and %s", name, prev, file)
			}
			seen[name] = file
		}
	}
	for _, c := range command.All() {
		if c.Doc == nil {
			t.Errorf("%s has no docs", c.Name)
		}
	}
}
