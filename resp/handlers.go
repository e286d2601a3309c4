package resp

import (
	"fmt"
	"sort"

	"github.com/raftstream/raftstream/resp/command"
)

// localFunc answers a KindLocal command on the connection's goroutine. A
// nil reply means the reply was already written or the connection is
// closing.
type localFunc func(s *Server, c *client, argv [][]byte) reply

// handlers holds the handler of every KindLocal row of the command table,
// by command ID: the table says what a command is, this says who answers
// it. Built once at init and never changed.
var handlers []localFunc

func init() {
	h, err := attach(localHandlers())
	if err != nil {
		panic(err)
	}
	handlers = h
}

// localHandlers names the handler of each KindLocal command. The handlers
// live in their family files (local.go, client_cmds.go, cluster_cmds.go, …).
func localHandlers() map[string]localFunc {
	return map[string]localFunc{
		// connection
		"ping": cmdPing, "echo": cmdEcho, "hello": cmdHello, "auth": cmdAuth, "select": cmdSelect,
		"quit": cmdQuit, "reset": cmdReset, "readonly": cmdReadonly, "readwrite": cmdReadwrite,
		"asking": cmdAsking,
		// transactions (multi.go)
		"multi": cmdMulti, "exec": cmdExec, "discard": cmdDiscard, "unwatch": cmdUnwatch,
		// server
		"time": cmdTime, "wait": cmdWait, "waitaof": cmdWaitAOF, "info": cmdInfo, "debug": cmdDebug, "monitor": cmdMonitor,
		// configuration and diagnostics (config.go, slowlog.go, latency.go)
		"config|get": cmdConfigGet, "config|set": cmdConfigSet, "config|resetstat": cmdConfigResetStat,
		"config|rewrite": cmdConfigRewrite,
		"slowlog|get":    cmdSlowlogGet, "slowlog|len": cmdSlowlogLen, "slowlog|reset": cmdSlowlogReset, "slowlog|help": cmdHelp,
		"latency|latest": cmdLatencyLatest, "latency|history": cmdLatencyHistory, "latency|reset": cmdLatencyReset,
		"latency|doctor": cmdLatencyDoctor, "latency|help": cmdHelp,
		"function|flush": cmdFunctionFlush, "function|list": cmdFunctionList,
		// HELP of the containers the server answers (help.go)
		"client|help": cmdHelp, "cluster|help": cmdHelp, "command|help": cmdHelp, "config|help": cmdHelp,
		"acl|help": cmdHelp, "function|help": cmdHelp, "raftstream|help": cmdHelp,
		// persistence (save.go)
		"save": cmdSave, "bgsave": cmdBgsave, "lastsave": cmdLastsave,
		// keyspace fan-out (keyspace.go)
		"scan": cmdScan, "keys": cmdKeys, "dbsize": cmdDBSize, "flushall": cmdFlushAll, "flushdb": cmdFlushAll,
		// client (client_cmds.go)
		"client|id": cmdClientID, "client|getname": cmdClientGetName, "client|setname": cmdClientSetName,
		"client|setinfo": cmdClientSetInfo, "client|info": cmdClientInfo, "client|list": cmdClientList,
		"client|kill": cmdClientKill, "client|no-evict": cmdClientOnOff, "client|no-touch": cmdClientOnOff,
		"client|pause": cmdClientPause, "client|unpause": cmdClientUnpause, "client|unblock": cmdClientUnblock,
		// cluster (cluster_cmds.go)
		"cluster|keyslot": cmdClusterKeyslot, "cluster|myid": cmdClusterMyID, "cluster|slots": cmdClusterSlots,
		"cluster|shards": cmdClusterShards, "cluster|nodes": cmdClusterNodes, "cluster|info": cmdClusterInfo,
		"cluster|countkeysinslot": cmdClusterCountKeys, "cluster|getkeysinslot": cmdClusterGetKeys,
		"cluster|replicas": cmdClusterReplicas, "cluster|links": cmdClusterLinks, "cluster|myshardid": cmdClusterMyShardID,
		// raftstream administration (admin_cmds.go)
		"raftstream|status": cmdRaftstreamStatus, "raftstream|transfer-leader": cmdRaftstreamTransferLeader,
		"raftstream|snapshot": cmdRaftstreamSnapshot, "raftstream|remove-node": cmdRaftstreamRemoveNode,
		"raftstream|retention": cmdRaftstreamRetention,                                     // retention.go
		"raftstream|backup":    cmdRaftstreamBackup,                                        // backup.go
		"raftstream|slots":     cmdRaftstreamSlots, "raftstream|shard": cmdRaftstreamShard, // slots_cmds.go
		"cluster|setslot": cmdClusterTopology, "cluster|addslots": cmdClusterTopology, "cluster|delslots": cmdClusterTopology,
		"cluster|addslotsrange": cmdClusterTopology, "cluster|delslotsrange": cmdClusterTopology, "migrate": cmdMigrate,
		// command (command_cmd.go)
		"command": cmdCommand, "command|count": cmdCommandCount, "command|info": cmdCommandInfo,
		"command|docs": cmdCommandDocs, "command|getkeys": cmdCommandGetKeys, "command|list": cmdCommandList,
		// access control (acl_cmd.go)
		"acl|setuser": cmdACLSetUser, "acl|getuser": cmdACLGetUser, "acl|deluser": cmdACLDelUser,
		"acl|list": cmdACLList, "acl|users": cmdACLUsers, "acl|whoami": cmdACLWhoami, "acl|cat": cmdACLCat,
		"acl|log": cmdACLLog, "acl|dryrun": cmdACLDryRun,
	}
}

// attach lays named handlers out by command ID. It fails unless every
// KindLocal row has exactly one handler and every handler names a KindLocal
// row, so a command added to the table without its handler (or the
// reverse) stops the server at start-up rather than at the first call.
func attach(named map[string]localFunc) ([]localFunc, error) {
	out := make([]localFunc, len(command.All()))
	var problems []string
	for name, h := range named {
		cmd := command.Get(name)
		switch {
		case cmd == nil || cmd.Name != name:
			problems = append(problems, fmt.Sprintf("handler for %q, which is not in the command table", name))
		case cmd.Kind != command.KindLocal:
			problems = append(problems, fmt.Sprintf("handler for %q, which the engine executes", name))
		default:
			out[cmd.ID] = h
		}
	}
	for _, cmd := range command.All() {
		if cmd.Kind == command.KindLocal && out[cmd.ID] == nil {
			problems = append(problems, fmt.Sprintf("no handler for %q", cmd.Name))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("resp: command table and handlers disagree: %v", problems)
	}
	return out, nil
}
