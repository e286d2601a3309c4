// Package external drives faults on a cluster the harness did not start,
// such as the docker compose cluster in deploy/: clients reach it only
// through its published 127.0.0.1 ports, and faults are docker commands on
// its containers:
//
//	kill      docker kill --signal KILL <c>      undone by  docker start <c>
//	pause     docker pause <c>                   undone by  docker unpause <c>
//	partition docker network disconnect <net> <c> undone by docker network connect [--ip <ip>] <net> <c>
//
// With DryRun the commands are printed instead of run. Example (the compose
// cluster of deploy/docker-compose.yml, project "rstest", docker-compose
// 1.29 names; the nodes' fixed IPs must be given back on reconnect):
//
//	jepsen run -addr 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 \
//	  -docker rstest_node1_1,rstest_node2_1,rstest_node3_1 -docker-network rstest_raftstream \
//	  -docker-ips 172.30.70.11,172.30.70.12,172.30.70.13 \
//	  -faults kill,pause,partition-one -duration 60s
package external

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Docker is the fault driver of a running docker compose cluster. Node i of
// the run is Containers[i].
type Docker struct {
	Containers []string
	Network    string   // network disconnected for partitions ("" = no partitions)
	IPs        []string // fixed IPs to reconnect with (optional; one per container)
	DryRun     bool
	Out        io.Writer // where DryRun prints commands (nil = discard)
	// Exec runs one docker command; nil means os/exec "docker".
	Exec func(args ...string) error
}

// Validate names the first problem.
func (d *Docker) Validate(nodes int) error {
	switch {
	case len(d.Containers) == 0:
		return errors.New("external: no containers")
	case len(d.Containers) != nodes:
		return fmt.Errorf("external: %d containers for %d addresses", len(d.Containers), nodes)
	case len(d.IPs) > 0 && len(d.IPs) != len(d.Containers):
		return fmt.Errorf("external: %d IPs for %d containers", len(d.IPs), len(d.Containers))
	}
	for _, c := range d.Containers {
		if c == "" || strings.ContainsAny(c, " \t") {
			return fmt.Errorf("external: bad container name %q", c)
		}
	}
	return nil
}

// Kill sends SIGKILL to node i's container.
func (d *Docker) Kill(i int) error { return d.run("kill", "--signal", "KILL", d.Containers[i]) }

// Start starts node i's container again.
func (d *Docker) Start(i int) error { return d.run("start", d.Containers[i]) }

// Pause freezes node i's container (cgroup freezer: SIGSTOP-like).
func (d *Docker) Pause(i int) error { return d.run("pause", d.Containers[i]) }

// Unpause thaws it.
func (d *Docker) Unpause(i int) error { return d.run("unpause", d.Containers[i]) }

// Disconnect cuts node i off the cluster network (a full partition of that
// node; its published port stays reachable only if another network carries
// it, so clients usually see it as down too).
func (d *Docker) Disconnect(i int) error {
	if d.Network == "" {
		return errors.New("external: no network to disconnect (-docker-network)")
	}
	return d.run("network", "disconnect", "--force", d.Network, d.Containers[i])
}

// Connect reattaches node i, at its fixed IP when IPs is set.
func (d *Docker) Connect(i int) error {
	if d.Network == "" {
		return errors.New("external: no network to connect (-docker-network)")
	}
	args := []string{"network", "connect"}
	if len(d.IPs) > i && d.IPs[i] != "" {
		args = append(args, "--ip", d.IPs[i])
	}
	return d.run(append(args, d.Network, d.Containers[i])...)
}

func (d *Docker) run(args ...string) error {
	if d.DryRun {
		if d.Out != nil {
			fmt.Fprintln(d.Out, "docker "+strings.Join(args, " "))
		}
		return nil
	}
	if d.Exec != nil {
		return d.Exec(args...)
	}
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
