package command

// The rows. Arity, flags, key positions, categories, tips and docs are
// Redis 7's (COMMAND INFO and COMMAND DOCS of redis-server 7.0, compared by
// a test), plus Redis 8.x's stream additions and raftstream's own
// RAFTSTREAM family and XGROUP SETDLQ.

// the flag sets Redis uses most often
const (
	fWF   = FlagWrite | FlagFast
	fWDF  = FlagWrite | FlagDenyOOM | FlagFast
	fRO   = FlagReadonly
	fROF  = FlagReadonly | FlagFast
	fConn = FlagNoScript | FlagLoading | FlagStale
	fLSF  = FlagLoading | FlagStale | FlagFast
	fAdm  = FlagAdmin | FlagNoScript | FlagLoading | FlagStale
	fHelp = FlagLoading | FlagStale
)

func add(c *Command) *Command {
	if _, dup := top[c.Name]; dup {
		panic("command: duplicate command " + c.Name)
	}
	register(c)
	top[c.Name] = c
	return c
}

// sub adds subcommands to a container command.
func sub(parent *Command, subs ...*Command) {
	parent.Kind = KindContainer
	parent.Sub = map[string]*Command{}
	for _, s := range subs {
		name := s.Name
		s.Name = parent.Name + "|" + s.Name
		register(s)
		parent.Sub[name] = s
	}
}

func register(c *Command) {
	if c.Step == 0 && c.First != 0 {
		c.Step = 1
	}
	c.ID = len(all)
	all = append(all, c)
}

func init() {
	top = map[string]*Command{}

	// ---- streams (executed by the engine) ----
	add(&Command{Name: "xadd", Arity: -5, Flags: fWDF, First: 1, Last: 1, Categories: "@write @stream @fast", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Appends a new message to a stream. Creates the key if it doesn't exist."})
	add(&Command{Name: "xrange", Arity: -4, Flags: fRO, First: 1, Last: 1, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns the messages from a stream within a range of IDs."})
	add(&Command{Name: "xrevrange", Arity: -4, Flags: fRO, First: 1, Last: 1, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns the messages from a stream within a range of IDs in reverse order."})
	add(&Command{Name: "xlen", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@read @stream @fast", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Return the number of messages in a stream."})
	add(&Command{Name: "xread", Arity: -4, Flags: FlagReadonly | FlagBlocking | FlagMovableKeys, StreamsKeyword: true, Categories: "@read @stream @slow @blocking", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise."})
	add(&Command{Name: "xreadgroup", Arity: -7, Flags: FlagWrite | FlagBlocking | FlagMovableKeys, StreamsKeyword: true, Categories: "@write @stream @slow @blocking", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise."})
	add(&Command{Name: "xack", Arity: -4, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream."})
	add(&Command{Name: "xpending", Arity: -3, Flags: fRO, First: 1, Last: 1, Categories: "@read @stream @slow", Tips: []string{"nondeterministic_output"}, Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns the information and entries from a stream consumer group's pending entries list."})
	add(&Command{Name: "xclaim", Arity: -6, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member."})
	add(&Command{Name: "xautoclaim", Arity: -6, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "6.2.0", Summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member."})
	add(&Command{Name: "xdel", Arity: -3, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Returns the number of messages after removing them from a stream."})
	add(&Command{Name: "xtrim", Arity: -4, Flags: FlagWrite, First: 1, Last: 1, Categories: "@write @stream @slow", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Deletes messages from the beginning of a stream."})
	add(&Command{Name: "xsetid", Arity: -3, Flags: fWDF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "An internal command for replicating stream values."})
	// Redis 8.x additions.
	add(&Command{Name: "xackdel", Arity: -6, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.2.0", Summary: "Acknowledges and deletes one or multiple messages for a stream consumer group."})
	add(&Command{Name: "xdelex", Arity: -5, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.2.0", Summary: "Deletes one or multiple entries from the stream."})
	add(&Command{Name: "xnack", Arity: -7, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.8.0", Summary: "Releases pending messages back to the group's PEL without acknowledging them, making them available for re-delivery."})
	add(&Command{Name: "xcfgset", Arity: -2, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.6.0", Summary: "Sets the IDMP configuration parameters for a stream."})

	xgroup := add(&Command{Name: "xgroup", Arity: -2, Categories: "@slow", Group: "stream", Since: "5.0.0", Summary: "A container for consumer groups commands."})
	sub(xgroup,
		&Command{Name: "create", Arity: -5, Flags: FlagWrite | FlagDenyOOM, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Creates a consumer group."},
		&Command{Name: "createconsumer", Arity: 5, Flags: FlagWrite | FlagDenyOOM, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "6.2.0", Summary: "Creates a consumer in a consumer group."},
		&Command{Name: "delconsumer", Arity: 5, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Deletes a consumer from a consumer group."},
		&Command{Name: "destroy", Arity: 4, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Destroys a consumer group."},
		&Command{Name: "setid", Arity: -5, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Sets the last-delivered ID of a consumer group."},
		&Command{Name: "setdlq", Arity: -5, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "raftstream", Summary: "Sets or clears a consumer group's dead-letter stream (raftstream extension, not Redis)."},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns helpful text about the different subcommands."},
	)
	xinfo := add(&Command{Name: "xinfo", Arity: -2, Categories: "@slow", Group: "stream", Since: "5.0.0", Summary: "A container for stream introspection commands."})
	sub(xinfo,
		&Command{Name: "stream", Arity: -3, Flags: fRO, First: 2, Last: 2, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns information about a stream."},
		&Command{Name: "groups", Arity: 3, Flags: fRO, First: 2, Last: 2, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns a list of the consumer groups of a stream."},
		&Command{Name: "consumers", Arity: 4, Flags: fRO, First: 2, Last: 2, Categories: "@read @stream @slow", Tips: []string{"nondeterministic_output"}, Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns a list of the consumers in a consumer group."},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Returns helpful text about the different subcommands."},
	)

	// ---- keyspace and strings (executed by the engine) ----
	add(&Command{Name: "del", Arity: -2, Flags: FlagWrite, First: 1, Last: -1, Categories: "@keyspace @write @slow", Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, Kind: KindWrite, Group: "generic", Since: "1.0.0", Summary: "Deletes one or more keys."})
	add(&Command{Name: "unlink", Arity: -2, Flags: fWF, First: 1, Last: -1, Categories: "@keyspace @write @fast", Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, Kind: KindWrite, Group: "generic", Since: "4.0.0", Summary: "Asynchronously deletes one or more keys."})
	add(&Command{Name: "exists", Arity: -2, Flags: fROF, First: 1, Last: -1, Categories: "@keyspace @read @fast", Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, Kind: KindRead, Group: "generic", Since: "1.0.0", Summary: "Determines whether one or more keys exist."})
	add(&Command{Name: "type", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@keyspace @read @fast", Kind: KindRead, Group: "generic", Since: "1.0.0", Summary: "Determines the type of value stored at a key."})
	add(&Command{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, First: 1, Last: 1, Categories: "@write @string @slow", Kind: KindWrite, Group: "string", Since: "1.0.0", Summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."})
	add(&Command{Name: "get", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@read @string @fast", Kind: KindRead, Group: "string", Since: "1.0.0", Summary: "Returns the string value of a key."})
	add(&Command{Name: "rename", Arity: 3, Flags: FlagWrite, First: 1, Last: 2, Categories: "@keyspace @write @slow", Kind: KindWrite, Group: "generic", Since: "1.0.0", Summary: "Renames a key and overwrites the destination."})
	add(&Command{Name: "renamenx", Arity: 3, Flags: fWF, First: 1, Last: 2, Categories: "@keyspace @write @fast", Kind: KindWrite, Group: "generic", Since: "1.0.0", Summary: "Renames a key only when the target key name doesn't exist."})
	add(&Command{Name: "scan", Arity: -2, Flags: fRO, Categories: "@keyspace @read @slow", Tips: []string{"nondeterministic_output", "request_policy:special"}, Kind: KindLocal, Group: "generic", Since: "2.8.0", Summary: "Iterates over the key names in the database."})
	add(&Command{Name: "keys", Arity: 2, Flags: fRO, Categories: "@keyspace @read @slow @dangerous", Tips: []string{"request_policy:all_shards", "nondeterministic_output_order"}, Kind: KindLocal, Group: "generic", Since: "1.0.0", Summary: "Returns all key names that match a pattern."})
	add(&Command{Name: "dbsize", Arity: 1, Flags: fROF, Categories: "@keyspace @read @fast", Tips: []string{"request_policy:all_shards", "response_policy:agg_sum"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Returns the number of keys in the database."})
	add(&Command{Name: "flushall", Arity: -1, Flags: FlagWrite, Categories: "@keyspace @write @slow @dangerous", Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Removes all keys from all databases."})
	add(&Command{Name: "flushdb", Arity: -1, Flags: FlagWrite, Categories: "@keyspace @write @slow @dangerous", Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Remove all keys from the current database."})
	memory := add(&Command{Name: "memory", Arity: -2, Categories: "@slow", Group: "server", Since: "4.0.0", Summary: "A container for memory diagnostics commands."})
	sub(memory,
		&Command{Name: "usage", Arity: -3, Flags: fRO, First: 2, Last: 2, Categories: "@read @slow", Kind: KindRead, Group: "server", Since: "4.0.0", Summary: "Estimates the memory usage of a key."},
	)
	object := add(&Command{Name: "object", Arity: -2, Categories: "@slow", Group: "generic", Since: "2.2.3", Summary: "A container for object introspection commands."})
	sub(object,
		&Command{Name: "encoding", Arity: 3, Flags: fRO, First: 2, Last: 2, Categories: "@keyspace @read @slow", Kind: KindRead, Group: "generic", Since: "2.2.3", Summary: "Returns the internal encoding of a Redis object."},
	)

	// ---- connection and server (answered by resp) ----
	add(&Command{Name: "ping", Arity: -1, Flags: FlagFast, Categories: "@fast @connection", Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Returns the server's liveliness response."})
	add(&Command{Name: "echo", Arity: 2, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Returns the given string."})
	add(&Command{Name: "hello", Arity: -1, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "6.0.0", Summary: "Handshakes with the Redis server."})
	add(&Command{Name: "auth", Arity: -2, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Authenticates the connection."})
	add(&Command{Name: "select", Arity: 2, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Changes the selected database."})
	add(&Command{Name: "quit", Arity: -1, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Closes the connection."})
	add(&Command{Name: "reset", Arity: 1, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "6.2.0", Summary: "Resets the connection."})
	add(&Command{Name: "readonly", Arity: 1, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Enables read-only queries for a connection to a Redis Cluster replica node."})
	add(&Command{Name: "readwrite", Arity: 1, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Enables read-write queries for a connection to a Reids Cluster replica node."})
	add(&Command{Name: "asking", Arity: 1, Flags: FlagFast, Categories: "@fast @connection", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Signals that a cluster client is following an -ASK redirect."})
	add(&Command{Name: "time", Arity: 1, Flags: fLSF, Categories: "@fast", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "server", Since: "2.6.0", Summary: "Returns the server time."})
	add(&Command{Name: "wait", Arity: 3, Flags: FlagNoScript, Categories: "@slow @connection", Tips: []string{"request_policy:all_shards", "response_policy:agg_min"}, Kind: KindLocal, Group: "generic", Since: "3.0.0", Summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."})
	add(&Command{Name: "waitaof", Arity: 4, Flags: FlagNoScript, Categories: "@slow @connection", Tips: []string{"request_policy:all_shards", "response_policy:agg_min"}, Kind: KindLocal, Group: "generic", Since: "7.2.0", Summary: "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas."})
	add(&Command{Name: "info", Arity: -1, Flags: fHelp, Categories: "@slow @dangerous", Tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Returns information and statistics about the server."})
	add(&Command{Name: "debug", Arity: -2, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "A container for debugging commands."})
	add(&Command{Name: "multi", Arity: 1, Flags: FlagNoScript | fLSF | FlagAllowBusy, Categories: "@fast @transaction", Kind: KindLocal, Group: "transactions", Since: "1.2.0", Summary: "Starts a transaction."})
	add(&Command{Name: "exec", Arity: 1, Flags: FlagNoScript | fHelp | FlagSkipSlowlog, Categories: "@slow @transaction", Kind: KindLocal, Group: "transactions", Since: "1.2.0", Summary: "Executes all commands in a transaction."})
	// NB: WATCH is not implemented (it needs a check-and-apply condition in
	// the log entry); UNWATCH is, trivially, since nothing is ever watched.
	add(&Command{Name: "unwatch", Arity: 1, Flags: FlagNoScript | fLSF | FlagAllowBusy, Categories: "@fast @transaction", Kind: KindLocal, Group: "transactions", Since: "2.2.0", Summary: "Forgets about watched keys of a transaction."})
	add(&Command{Name: "discard", Arity: 1, Flags: FlagNoScript | fLSF | FlagAllowBusy, Categories: "@fast @transaction", Kind: KindLocal, Group: "transactions", Since: "2.0.0", Summary: "Discards a transaction."})

	client := add(&Command{Name: "client", Arity: -2, Categories: "@slow", Group: "connection", Since: "2.4.0", Summary: "A container for client connection commands."})
	cc := "@slow @connection"
	ca := "@admin @slow @dangerous @connection"
	sub(client,
		&Command{Name: "id", Arity: 2, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "5.0.0", Summary: "Returns the unique client ID of the connection."},
		&Command{Name: "getname", Arity: 2, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "2.6.9", Summary: "Returns the name of the connection."},
		&Command{Name: "setname", Arity: 3, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "2.6.9", Summary: "Sets the connection name."},
		&Command{Name: "setinfo", Arity: 4, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "7.2.0", Summary: "Sets information specific to the client or connection."},
		&Command{Name: "info", Arity: 2, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "6.2.0", Summary: "Returns information about the connection."},
		&Command{Name: "list", Arity: -2, Flags: fAdm, Categories: ca, Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "connection", Since: "2.4.0", Summary: "Lists open connections."},
		&Command{Name: "kill", Arity: -3, Flags: fAdm, Categories: ca, Kind: KindLocal, Group: "connection", Since: "2.4.0", Summary: "Terminates open connections."},
		&Command{Name: "no-evict", Arity: 3, Flags: fAdm, Categories: ca, Kind: KindLocal, Group: "connection", Since: "7.0.0", Summary: "Sets the client eviction mode of the connection."},
		&Command{Name: "no-touch", Arity: 3, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "7.2.0", Summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys."},
	)
	config := add(&Command{Name: "config", Arity: -2, Categories: "@slow", Group: "server", Since: "2.0.0", Summary: "A container for server configuration commands."})
	sub(config,
		&Command{Name: "get", Arity: -3, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "2.0.0", Summary: "Returns the effective values of configuration parameters."},
		&Command{Name: "set", Arity: -4, Flags: fAdm, Categories: "@admin @slow @dangerous", Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "2.0.0", Summary: "Sets configuration parameters in-flight."},
		&Command{Name: "resetstat", Arity: 2, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "2.0.0", Summary: "Resets the server's statistics."},
	)
	function := add(&Command{Name: "function", Arity: -2, Categories: "@slow", Group: "scripting", Since: "7.0.0", Summary: "A container for function commands."})
	sub(function,
		&Command{Name: "flush", Arity: -2, Flags: FlagWrite | FlagNoScript, Categories: "@write @slow @scripting", Kind: KindLocal, Group: "scripting", Since: "7.0.0", Summary: "Deletes all libraries and functions."},
		&Command{Name: "list", Arity: -2, Flags: FlagNoScript, Categories: "@slow @scripting", Kind: KindLocal, Group: "scripting", Since: "7.0.0", Summary: "Returns information about all libraries."},
	)
	cluster := add(&Command{Name: "cluster", Arity: -2, Categories: "@slow", Group: "cluster", Since: "3.0.0", Summary: "A container for Redis Cluster commands."})
	sub(cluster,
		&Command{Name: "keyslot", Arity: 3, Flags: FlagStale, Categories: "@slow", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns the hash slot for a key."},
		&Command{Name: "myid", Arity: 2, Flags: FlagStale, Categories: "@slow", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns the ID of a node."},
		&Command{Name: "slots", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns the mapping of cluster slots to nodes."},
		&Command{Name: "shards", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "7.0.0", Summary: "Returns the mapping of cluster slots to shards."},
		&Command{Name: "nodes", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns the cluster configuration for a node."},
		&Command{Name: "info", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns information about the state of a node."},
		&Command{Name: "countkeysinslot", Arity: 3, Flags: FlagStale, Categories: "@slow", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns the number of keys in a hash slot."},
		&Command{Name: "getkeysinslot", Arity: 4, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns the key names in a hash slot."},
		// Redis's own topology commands: raftstream moves slots itself
		// (RAFTSTREAM SLOTS MOVE); these answer an error that says so.
		&Command{Name: "setslot", Arity: -4, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Binds a hash slot to a node."},
		&Command{Name: "addslots", Arity: -3, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Assigns new hash slots to a node."},
		&Command{Name: "delslots", Arity: -3, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Sets hash slots as unbound for a node."},
		&Command{Name: "addslotsrange", Arity: -4, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "7.0.0", Summary: "Assigns new hash slot ranges to a node."},
		&Command{Name: "delslotsrange", Arity: -4, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "7.0.0", Summary: "Sets hash slot ranges as unbound for a node."},
	)
	add(&Command{Name: "migrate", Arity: -6, Flags: FlagWrite | FlagMovableKeys, First: 3, Last: 3, Step: 1, Categories: "@keyspace @write @slow @dangerous", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "generic", Since: "2.6.0", Summary: "Atomically transfers a key from one Redis instance to another."})
	// ---- raftstream administration ----
	rs := add(&Command{Name: "raftstream", Arity: -2, Categories: "@admin @slow @dangerous", Group: "server", Since: "7.0.0", Summary: "A container for raftstream administration commands."})
	sub(rs,
		&Command{Name: "status", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagStale, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Returns the Raft state of every shard replica hosted on this node."},
		&Command{Name: "transfer-leader", Arity: -3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Hands leadership of a shard led by this node to another replica."},
		&Command{Name: "snapshot", Arity: -2, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Takes a Raft snapshot of one or every shard replica hosted on this node."},
		&Command{Name: "remove-node", Arity: 3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Drains a member (its replicas move, its leaderships are handed over) and drops it from the cluster."},
		&Command{Name: "shard", Arity: -3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Adds a shard (ADD [node-id ...]) or retires an empty one (REMOVE shard)."},
		&Command{Name: "slots", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagStale, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Moves hash slots between shards online (MOVE first-last shard) and reports the moves in flight (STATUS)."},
	)
	command := add(&Command{Name: "command", Arity: -1, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Returns detailed information about all commands."})
	sub(command,
		&Command{Name: "count", Arity: 2, Flags: fHelp, Categories: "@slow @connection", Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Returns a count of commands."},
		&Command{Name: "info", Arity: -2, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Returns information about one, multiple or all commands."},
		&Command{Name: "docs", Arity: -2, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Returns documentary information about one, multiple or all commands."},
		&Command{Name: "getkeys", Arity: -4, Flags: fHelp, Categories: "@slow @connection", Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Extracts the key names from an arbitrary command."},
		&Command{Name: "list", Arity: -2, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Returns a list of command names."},
	)
	// COMMAND with no subcommand is answered by the container itself.
	command.Kind = KindLocal

	// ---- access control (answered by resp) ----
	const cats = "@admin @slow @dangerous"
	acl := add(&Command{Name: "acl", Arity: -2, Categories: "@slow", Group: "server", Since: "6.0.0", Summary: "A container for Access List Control commands."})
	sub(acl,
		&Command{Name: "setuser", Arity: -3, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Creates and modifies an ACL user and its rules."},
		&Command{Name: "getuser", Arity: 3, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Lists the ACL rules of a user."},
		&Command{Name: "deluser", Arity: -3, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Deletes ACL users, and terminates their connections."},
		&Command{Name: "list", Arity: 2, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Dumps the effective rules in ACL file format."},
		&Command{Name: "users", Arity: 2, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Lists all ACL users."},
		&Command{Name: "whoami", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Returns the authenticated username of the current connection."},
		&Command{Name: "cat", Arity: -2, Flags: FlagNoScript | FlagLoading | FlagStale, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Lists the ACL categories, or the commands inside a category."},
		&Command{Name: "log", Arity: -2, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Lists recent security events generated due to ACL rules."},
		&Command{Name: "dryrun", Arity: -4, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Simulates the execution of a command by a user, without executing the command."},
	)
}
