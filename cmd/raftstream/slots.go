package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/resp/command"
	"github.com/raftstream/raftstream/resp/wire"
)

// Slot moves: the server's flags and wiring, and the `raftstream slots`
// operator subcommands (the server side is resp/cluster_slots.go and
// cluster/migrate.go).
//
//	raftstream slots move   --addr host:port --slots first-last --to shard [--wait]
//	raftstream slots status --addr host:port
//	raftstream shard add    --addr host:port [--nodes id,id,...]
//	raftstream shard remove --addr host:port --shard N

func init() {
	adminCommands["slots"] = slotsCmd
	adminCommands["shard"] = shardCmd
}

// slotOptions are the server's slot-move flags.
type slotOptions struct {
	migrateRate   int64
	migrateChunk  int
	shardsPerNode float64
	shardPolicy   string
}

func registerSlotFlags(fs *flag.FlagSet, o *slotOptions) {
	fs.Int64Var(&o.migrateRate, "migrate-rate", cluster.DefaultMigrateRate, "bytes per second this node copies to other shards when it moves slots (all moves together; negative = unlimited)")
	fs.IntVar(&o.migrateChunk, "migrate-chunk", cluster.DefaultMigrateChunk, "largest log entry of a slot move in bytes (bigger keys are sent in chunks of this size)")
	fs.Float64Var(&o.shardsPerNode, "shards-per-node", 0, "shards per node the shard policy of a NEW cluster keeps as nodes join and leave; 0 = --shards / --bootstrap-expect when --shards is given, else 1 with nodes that share a host of few CPUs counting as fewer (--host-cpus) (RAFTSTREAM SHARD POLICY changes it later)")
	fs.StringVar(&o.shardPolicy, "shard-policy", "auto", "shard policy of a NEW cluster: auto (shards added, retired and given slots as nodes join and leave) or off (only by RAFTSTREAM SHARD and SLOTS MOVE)")
}

// checkSlotOptions refuses bad slot and shard-policy flags.
func checkSlotOptions(o slotOptions) error {
	if o.shardPolicy != "auto" && o.shardPolicy != "off" {
		return fmt.Errorf("--shard-policy %q: want auto or off", o.shardPolicy)
	}
	if o.shardsPerNode < 0 || o.shardsPerNode > 64 {
		return fmt.Errorf("--shards-per-node %v: want 0 to 64", o.shardsPerNode)
	}
	return nil
}

// applySlotOptions wires the slot-move settings, and the command table's
// key positions that every shard's FSM checks commands of moving slots
// against, into the node's configuration.
func applySlotOptions(c *cluster.Config, o slotOptions) {
	c.MigrateRate = o.migrateRate
	c.MigrateChunk = o.migrateChunk
	c.ShardsPerNode = o.shardsPerNode
	c.ShardPolicyOff = o.shardPolicy == "off"
	c.KeysOf = commandKeys
}

// commandKeys is the positions of argv's keys by the command table (none
// for an unknown command or one of the wrong arity).
func commandKeys(argv [][]byte) []int {
	c, err := command.Lookup(argv)
	if err != nil || c == nil {
		return nil
	}
	return c.Keys(argv)
}

func slotsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "move" && args[0] != "status") {
		fmt.Fprintln(stderr, "usage: raftstream slots move --addr host:port --slots first-last --to shard [--wait]\n       raftstream slots status --addr host:port")
		return 2
	}
	fs, addr, pass, timeout := clientFlags("slots "+args[0], stderr)
	var slotsArg string
	var to int
	var wait bool
	if args[0] == "move" {
		fs.StringVar(&slotsArg, "slots", "", "slot range first-last (or one slot) to move (required)")
		fs.IntVar(&to, "to", -1, "shard to move the slots to (required)")
		fs.BoolVar(&wait, "wait", false, "wait until the moves are done (bounded by --timeout)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	c, err := adminDial(*addr, *pass, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "raftstream slots:", err)
		return 1
	}
	defer c.Close()
	if args[0] == "status" {
		return printSlotStatus(c, stdout, stderr)
	}
	if slotsArg == "" || to < 0 {
		fmt.Fprintln(stderr, "raftstream slots move: --slots and --to are required")
		return 2
	}
	v, err := adminDo(c, "RAFTSTREAM", "SLOTS", "MOVE", slotsArg, fmt.Sprint(to))
	if err != nil {
		fmt.Fprintln(stderr, "raftstream slots move:", err)
		return 1
	}
	ids, _ := v.([]any)
	if len(ids) == 0 {
		fmt.Fprintf(stdout, "slots %s already belong to shard %d\n", slotsArg, to)
		return 0
	}
	var names []string
	for _, id := range ids {
		names = append(names, fmt.Sprint(id))
	}
	fmt.Fprintf(stdout, "moves %s recorded\n", strings.Join(names, ", "))
	if !wait {
		return 0
	}
	deadline := time.Now().Add(*timeout)
	for {
		left, err := movesLeft(c, names)
		if err != nil {
			fmt.Fprintln(stderr, "raftstream slots move:", err)
			return 1
		}
		if left == 0 {
			fmt.Fprintln(stdout, "done")
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "raftstream slots move: %d move(s) still in flight after %v\n", left, *timeout)
			return 1
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// slotStatus asks for RAFTSTREAM SLOTS STATUS: the slot epoch and a row
// (field → value) per move in flight.
func slotStatus(c *wire.Client) (int64, []map[string]any, error) {
	v, err := adminDo(c, "RAFTSTREAM", "SLOTS", "STATUS")
	if err != nil {
		return 0, nil, err
	}
	top, ok := v.([]any)
	if !ok || len(top) < 4 {
		return 0, nil, errors.New("unexpected RAFTSTREAM SLOTS STATUS reply")
	}
	epoch, _ := top[1].(int64)
	raw, _ := top[3].([]any)
	var rows []map[string]any
	for _, r := range raw {
		kv, _ := r.([]any)
		row := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			row[fmt.Sprint(kv[i])] = kv[i+1]
		}
		rows = append(rows, row)
	}
	return epoch, rows, nil
}

// movesLeft counts the moves of ids still in flight.
func movesLeft(c *wire.Client, ids []string) (int, error) {
	_, rows, err := slotStatus(c)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		for _, id := range ids {
			if fmt.Sprint(r["id"]) == id {
				n++
			}
		}
	}
	return n, nil
}

func printSlotStatus(c *wire.Client, stdout, stderr io.Writer) int {
	epoch, rows, err := slotStatus(c)
	if err != nil {
		fmt.Fprintln(stderr, "raftstream slots status:", err)
		return 1
	}
	fmt.Fprintf(stdout, "slot map epoch %d, %d move(s) in flight\n", epoch, len(rows))
	if len(rows) == 0 {
		return 0
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MOVE\tSLOTS\tFROM\tTO\tPHASE\tKEYS MOVED\tBYTES MOVED\tKEYS LEFT\tERROR")
	for _, r := range rows {
		fmt.Fprintf(w, "%v\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%v\n", r["id"], r["slots"], r["from"], r["to"], r["phase"],
			r["keys-moved"], r["bytes-moved"], r["keys-left"], r["error"])
	}
	w.Flush()
	return 0
}

// shardCmd is `raftstream shard add [--nodes id,id,...] | remove --shard N
// | policy [--set auto|off] [--per-node K]`.
func shardCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "policy") {
		fmt.Fprintln(stderr, "usage: raftstream shard add --addr host:port [--nodes id,id,...]\n       raftstream shard remove --addr host:port --shard N\n       raftstream shard policy --addr host:port [--set auto|off] [--per-node K]")
		return 2
	}
	if args[0] == "policy" {
		return shardPolicyCmd(args[1:], stdout, stderr)
	}
	fs, addr, pass, timeout := clientFlags("shard "+args[0], stderr)
	var nodes string
	var shard int
	if args[0] == "add" {
		fs.StringVar(&nodes, "nodes", "", "comma-separated node IDs to place the shard's replicas on, the first its preferred leader (default: the controller places it)")
	} else {
		fs.IntVar(&shard, "shard", -1, "the shard to retire (required): it must own no slots and hold no keys")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cmd := []string{"RAFTSTREAM", "SHARD", strings.ToUpper(args[0])}
	if args[0] == "add" {
		for _, id := range strings.Split(nodes, ",") {
			if id = strings.TrimSpace(id); id != "" {
				cmd = append(cmd, id)
			}
		}
	} else {
		if shard < 0 {
			fmt.Fprintln(stderr, "raftstream shard remove: --shard is required")
			return 2
		}
		cmd = append(cmd, fmt.Sprint(shard))
	}
	c, err := adminDial(*addr, *pass, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "raftstream shard:", err)
		return 1
	}
	defer c.Close()
	v, err := adminDo(c, cmd...)
	if err != nil {
		fmt.Fprintf(stderr, "raftstream shard %s: %v\n", args[0], err)
		return 1
	}
	if args[0] == "add" {
		fmt.Fprintf(stdout, "shard %v added (it owns no slots: raftstream slots move --to %v gives it some)\n", v, v)
	} else {
		fmt.Fprintf(stdout, "shard %d retired\n", shard)
	}
	return 0
}

// shardPolicyCmd is `raftstream shard policy`: prints the shard policy, or
// sets it (RAFTSTREAM SHARD POLICY).
func shardPolicyCmd(args []string, stdout, stderr io.Writer) int {
	fs, addr, pass, timeout := clientFlags("shard policy", stderr)
	set := fs.String("set", "", "auto or off: turn the shard policy on or off")
	perNode := fs.String("per-node", "", "shards per node the policy keeps, counted per node, not fitted to the hosts (with --set)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmd := []string{"RAFTSTREAM", "SHARD", "POLICY"}
	switch {
	case *set != "":
		cmd = append(cmd, strings.ToUpper(*set))
		if *perNode != "" {
			cmd = append(cmd, "PER-NODE", *perNode)
		}
	case *perNode != "":
		fmt.Fprintln(stderr, "raftstream shard policy: --per-node needs --set auto|off")
		return 2
	}
	c, err := adminDial(*addr, *pass, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "raftstream shard policy:", err)
		return 1
	}
	defer c.Close()
	v, err := adminDo(c, cmd...)
	if err != nil {
		fmt.Fprintf(stderr, "raftstream shard policy: %v\n", err)
		return 1
	}
	if arr, ok := v.([]any); ok {
		for i := 0; i+1 < len(arr); i += 2 {
			fmt.Fprintf(stdout, "%v %v\n", arr[i], arr[i+1])
		}
		return 0
	}
	fmt.Fprintln(stdout, v)
	return 0
}
