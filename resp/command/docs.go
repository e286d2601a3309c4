package command

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"
)

// COMMAND DOCS: what a command's documentation says beyond its table row
// (the row holds summary, since and group): complexity, doc flags,
// deprecation, history and the arguments that redis-cli turns into its
// hints and HELP. It is data, in docs/:
//
//   - redis70.json: redis-server 7.0.15's COMMAND DOCS of every row Redis
//     7.0 has, generated, not edited: `go test ./resp/command -run
//     TestDocsAreRedis70 -rewrite` rewrites it from a redis-server the test
//     starts (and without -rewrite the test fails where the file and
//     redis-server disagree).
//   - added.json: written by hand, for the rows Redis 7.0 lacks: commands
//     Redis added later (CLIENT SETINFO and NO-TOUCH, CLUSTER MYSHARDID,
//     the 8.x stream commands, from their documentation on redis.io) and
//     raftstream's own (RAFTSTREAM, XGROUP SETDLQ).
//
// A command Redis 7.0 has keeps 7.0's docs even where raftstream answers
// more (XADD's 8.x options, for one): the docs are Redis's, compared byte
// for byte with it.

// Doc is the part of a command's COMMAND DOCS reply that its row does not
// hold, in Redis's field names.
type Doc struct {
	Complexity      string      `json:"complexity,omitempty"`
	DocFlags        []string    `json:"doc_flags,omitempty"`
	DeprecatedSince string      `json:"deprecated_since,omitempty"`
	ReplacedBy      string      `json:"replaced_by,omitempty"`
	History         [][2]string `json:"history,omitempty"` // [version, change]
	Arguments       []Arg       `json:"arguments,omitempty"`
}

// Arg is one argument in COMMAND DOCS, as Redis 7.0 describes it.
type Arg struct {
	Name            string   `json:"name"`
	Type            string   `json:"type"` // string, integer, double, key, pattern, unix-time, pure-token, oneof, block
	KeySpecIndex    *int     `json:"key_spec_index,omitempty"`
	Token           *string  `json:"token,omitempty"` // nil: none; MIGRATE has an empty one
	Summary         string   `json:"summary,omitempty"`
	Since           string   `json:"since,omitempty"`
	DeprecatedSince string   `json:"deprecated_since,omitempty"`
	Flags           []string `json:"flags,omitempty"` // optional, multiple, multiple_token
	Arguments       []Arg    `json:"arguments,omitempty"`
}

// DocFiles are the docs data files, by name (tests read them).
//
//go:embed docs/*.json
var DocFiles embed.FS

// The docs data files.
const (
	DocsRedis70 = "docs/redis70.json"
	DocsAdded   = "docs/added.json"
)

// ParseDocs decodes a docs data file: Docs by row name ("xadd",
// "xgroup|create").
func ParseDocs(b []byte) (map[string]*Doc, error) {
	var m map[string]*Doc
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// attachDocs gives every row its Doc from the data files. A row without one
// has none (TestEveryRowHasDocs holds the data and the table together); a
// Doc for no row is ignored.
func attachDocs() {
	for _, file := range []string{DocsRedis70, DocsAdded} {
		b, err := DocFiles.ReadFile(file)
		if err != nil {
			panic(fmt.Sprintf("command: %s: %v", file, err))
		}
		docs, err := ParseDocs(b)
		if err != nil {
			panic(fmt.Sprintf("command: %s: %v", file, err))
		}
		for name, d := range docs {
			if c := Get(name); c != nil && c.Name == strings.ToLower(name) {
				c.Doc = d
			}
		}
	}
}
