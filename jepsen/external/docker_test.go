package external

import (
	"bytes"
	"strings"
	"testing"
)

func TestDryRunPrintsTheCommands(t *testing.T) {
	var out bytes.Buffer
	d := &Docker{Containers: []string{"c1", "c2"}, Network: "deploy_default", IPs: []string{"10.0.0.1", "10.0.0.2"},
		DryRun: true, Out: &out}
	if err := d.Validate(2); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(int) error{d.Kill, d.Start, d.Pause, d.Unpause, d.Disconnect, d.Connect} {
		if err := f(1); err != nil {
			t.Fatal(err)
		}
	}
	want := `docker kill --signal KILL c2
docker start c2
docker pause c2
docker unpause c2
docker network disconnect --force deploy_default c2
docker network connect --ip 10.0.0.2 deploy_default c2
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestExecAndValidation(t *testing.T) {
	var got [][]string
	d := &Docker{Containers: []string{"a"}, Exec: func(args ...string) error { got = append(got, args); return nil }}
	if err := d.Kill(0); err != nil || len(got) != 1 || strings.Join(got[0], " ") != "kill --signal KILL a" {
		t.Fatalf("%v %v", err, got)
	}
	if err := d.Disconnect(0); err == nil {
		t.Error("partition without a network accepted")
	}
	for _, bad := range []*Docker{{}, {Containers: []string{"a", "b"}}, {Containers: []string{"a b"}},
		{Containers: []string{"a"}, IPs: []string{"1", "2"}}} {
		if bad.Validate(1) == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
