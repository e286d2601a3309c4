package resp

import (
	"strings"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// HELP of the containers the server answers (CLIENT, CLUSTER, COMMAND,
// CONFIG, ACL, FUNCTION, RAFTSTREAM); the engine answers the HELP of the
// ones it executes (XGROUP, XINFO, OBJECT, MEMORY), in the same format
// (engine.HelpReply).
//
// What the text lists: Redis 7.0.15's text for each subcommand the command
// table has, in Redis's order, and nothing for the subcommands raftstream
// does not answer (CLIENT TRACKING, CLUSTER ADDSLOTS, CONFIG REWRITE, ...):
// HELP describes what this server does. Subcommands Redis added after 7.0
// that raftstream answers (CLIENT SETINFO and NO-TOUCH, CLUSTER MYSHARDID,
// CLIENT KILL's ID and MAXAGE filters) have the later Redis text; the
// footer is 7.4's "Print this help." (7.0: "Prints"), as in the engine's
// HELPs. The text is kept whole here and filtered by the table when the
// server starts, so a subcommand added to the table brings its lines with
// it. TestHelpMatchesRedis compares every HELP with redis-server 7.0's.

// helpBlock is the text of one subcommand in a HELP reply: its usage line
// and the indented lines after it.
type helpBlock struct {
	sub   string // the subcommand documented, lower case; "" = always shown
	since string // the Redis version that added the lines after 7.0; "" = in 7.0.15's text
	lines []string
}

// helpTexts holds, per container, Redis's HELP text as blocks.
var helpTexts = map[string][]helpBlock{
	"slowlog": {
		{lines: []string{
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
		}},
	},
	"latency": {
		{lines: []string{
			"DOCTOR",
			"    Return a human readable latency analysis report.",
			"HISTORY <event>",
			"    Return time-latency samples for the <event> class.",
			"LATEST",
			"    Return the latest latency samples for all events.",
			"RESET [<event> ...]",
			"    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
		}},
	},
	"client": {
		{sub: "caching", lines: []string{
			"CACHING (YES|NO)",
			"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes."}},
		{sub: "getredir", lines: []string{
			"GETREDIR",
			"    Return the client ID we are redirecting to when tracking is enabled."}},
		{sub: "getname", lines: []string{
			"GETNAME",
			"    Return the name of the current connection."}},
		{sub: "id", lines: []string{
			"ID",
			"    Return the ID of the current connection."}},
		{sub: "info", lines: []string{
			"INFO",
			"    Return information about the current client connection."}},
		{sub: "kill", lines: []string{
			"KILL <ip:port>",
			"    Kill connection made from <ip:port>."}},
		{sub: "kill", lines: []string{
			"KILL <option> <value> [<option> <value> [...]]",
			"    Kill connections. Options are:",
			"    * ADDR (<ip:port>|<unixsocket>:0)",
			"      Kill connections made from the specified address",
			"    * LADDR (<ip:port>|<unixsocket>:0)",
			"      Kill connections made to specified local address",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
			"      Kill connections by type.",
			"    * USER <username>",
			"      Kill connections authenticated by <username>.",
			"    * SKIPME (YES|NO)",
			"      Skip killing current connection (default: yes)."}},
		{sub: "kill", since: "7.4.0", lines: []string{
			"    * ID <client-id>",
			"      Kill connections by client id.",
			"    * MAXAGE <maxage>",
			"      Kill connections older than the specified age."}},
		{sub: "list", lines: []string{
			"LIST [options ...]",
			"    Return information about client connections. Options:",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
			"      Return clients of specified type."}},
		{sub: "unpause", lines: []string{
			"UNPAUSE",
			"    Stop the current client pause, resuming traffic."}},
		{sub: "pause", lines: []string{
			"PAUSE <timeout> [WRITE|ALL]",
			"    Suspend all, or just write, clients for <timeout> milliseconds."}},
		{sub: "reply", lines: []string{
			"REPLY (ON|OFF|SKIP)",
			"    Control the replies sent to the current connection."}},
		{sub: "setname", lines: []string{
			"SETNAME <name>",
			"    Assign the name <name> to the current connection."}},
		{sub: "setinfo", since: "7.2.0", lines: []string{
			"SETINFO <option> <value>",
			"    Set client meta attr. Options are:",
			"    * LIB-NAME: the client lib name.",
			"    * LIB-VER: the client lib version."}},
		{sub: "unblock", lines: []string{
			"UNBLOCK <clientid> [TIMEOUT|ERROR]",
			"    Unblock the specified blocked client."}},
		{sub: "tracking", lines: []string{
			"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
			"         [OPTIN] [OPTOUT] [NOLOOP]",
			"    Control server assisted client side caching."}},
		{sub: "trackinginfo", lines: []string{
			"TRACKINGINFO",
			"    Report tracking status for the current connection."}},
		{sub: "no-evict", lines: []string{
			"NO-EVICT (ON|OFF)",
			"    Protect current client connection from eviction."}},
		{sub: "no-touch", since: "7.2.0", lines: []string{
			"NO-TOUCH (ON|OFF)",
			"    Will not touch LRU/LFU stats when this mode is on."}},
	},
	"config": {
		{sub: "get", lines: []string{
			"GET <pattern>",
			"    Return parameters matching the glob-like <pattern> and their values."}},
		{sub: "set", lines: []string{
			"SET <directive> <value>",
			"    Set the configuration <directive> to <value>."}},
		{sub: "resetstat", lines: []string{
			"RESETSTAT",
			"    Reset statistics reported by the INFO command."}},
		{sub: "rewrite", lines: []string{
			"REWRITE",
			"    Rewrite the configuration file."}},
	},
	"command": {
		{lines: []string{
			"(no subcommand)",
			"    Return details about all Redis commands."}},
		{sub: "count", lines: []string{
			"COUNT",
			"    Return the total number of commands in this Redis server."}},
		{sub: "list", lines: []string{
			"LIST",
			"    Return a list of all commands in this Redis server."}},
		{sub: "info", lines: []string{
			"INFO [<command-name> ...]",
			"    Return details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned."}},
		{sub: "docs", lines: []string{
			"DOCS [<command-name> ...]",
			"    Return documentation details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned."}},
		{sub: "getkeys", lines: []string{
			"GETKEYS <full-command>",
			"    Return the keys from a full Redis command."}},
		{sub: "getkeysandflags", lines: []string{
			"GETKEYSANDFLAGS <full-command>",
			"    Return the keys and the access flags from a full Redis command."}},
	},
	"acl": {
		{sub: "cat", lines: []string{
			"CAT [<category>]",
			"    List all commands that belong to <category>, or all command categories",
			"    when no category is specified."}},
		{sub: "deluser", lines: []string{
			"DELUSER <username> [<username> ...]",
			"    Delete a list of users."}},
		{sub: "dryrun", lines: []string{
			"DRYRUN <username> <command> [<arg> ...]",
			"    Returns whether the user can execute the given command without executing the command."}},
		{sub: "getuser", lines: []string{
			"GETUSER <username>",
			"    Get the user's details."}},
		{sub: "genpass", lines: []string{
			"GENPASS [<bits>]",
			"    Generate a secure 256-bit user password. The optional `bits` argument can",
			"    be used to specify a different size."}},
		{sub: "list", lines: []string{
			"LIST",
			"    Show users details in config file format."}},
		{sub: "load", lines: []string{
			"LOAD",
			"    Reload users from the ACL file."}},
		{sub: "log", lines: []string{
			"LOG [<count> | RESET]",
			"    Show the ACL log entries."}},
		{sub: "save", lines: []string{
			"SAVE",
			"    Save the current config to the ACL file."}},
		{sub: "setuser", lines: []string{
			"SETUSER <username> <attribute> [<attribute> ...]",
			"    Create or modify a user with the specified attributes."}},
		{sub: "users", lines: []string{
			"USERS",
			"    List all the registered usernames."}},
		{sub: "whoami", lines: []string{
			"WHOAMI",
			"    Return the current connection username."}},
	},
	"function": {
		{sub: "load", lines: []string{
			"LOAD [REPLACE] <FUNCTION CODE>",
			"    Create a new library with the given library name and code."}},
		{sub: "delete", lines: []string{
			"DELETE <LIBRARY NAME>",
			"    Delete the given library."}},
		{sub: "list", lines: []string{
			"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
			"    Return general information on all the libraries:",
			"    * Library name",
			"    * The engine used to run the Library",
			"    * Library description",
			"    * Functions list",
			"    * Library code (if WITHCODE is given)",
			"    It also possible to get only function that matches a pattern using LIBRARYNAME argument."}},
		{sub: "stats", lines: []string{
			"STATS",
			"    Return information about the current function running:",
			"    * Function name",
			"    * Command used to run the function",
			"    * Duration in MS that the function is running",
			"    If no function is running, return nil",
			"    In addition, returns a list of available engines."}},
		{sub: "kill", lines: []string{
			"KILL",
			"    Kill the current running function."}},
		{sub: "flush", lines: []string{
			"FLUSH [ASYNC|SYNC]",
			"    Delete all the libraries.",
			"    When called without the optional mode argument, the behavior is determined by the",
			"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
			"    * ASYNC: Asynchronously flush the libraries.",
			"    * SYNC: Synchronously flush the libraries."}},
		{sub: "dump", lines: []string{
			"DUMP",
			"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command"}},
		{sub: "restore", lines: []string{
			"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
			"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
			"    control how to handle existing libraries (default APPEND):",
			"    * FLUSH: delete all existing libraries.",
			"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
			"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
			"      libraries with the new libraries (notice that even on this option there is a chance of failure",
			"      in case of functions name collision with another library)."}},
	},
	"cluster": {
		{sub: "addslots", lines: []string{
			"ADDSLOTS <slot> [<slot> ...]",
			"    Assign slots to current node."}},
		{sub: "addslotsrange", lines: []string{
			"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
			"    Assign slots which are between <start-slot> and <end-slot> to current node."}},
		{sub: "bumpepoch", lines: []string{
			"BUMPEPOCH",
			"    Advance the cluster config epoch."}},
		{sub: "count-failure-reports", lines: []string{
			"COUNT-FAILURE-REPORTS <node-id>",
			"    Return number of failure reports for <node-id>."}},
		{sub: "countkeysinslot", lines: []string{
			"COUNTKEYSINSLOT <slot>",
			"    Return the number of keys in <slot>."}},
		{sub: "delslots", lines: []string{
			"DELSLOTS <slot> [<slot> ...]",
			"    Delete slots information from current node."}},
		{sub: "delslotsrange", lines: []string{
			"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
			"    Delete slots information which are between <start-slot> and <end-slot> from current node."}},
		{sub: "failover", lines: []string{
			"FAILOVER [FORCE|TAKEOVER]",
			"    Promote current replica node to being a master."}},
		{sub: "forget", lines: []string{
			"FORGET <node-id>",
			"    Remove a node from the cluster."}},
		{sub: "getkeysinslot", lines: []string{
			"GETKEYSINSLOT <slot> <count>",
			"    Return key names stored by current node in a slot."}},
		{sub: "flushslots", lines: []string{
			"FLUSHSLOTS",
			"    Delete current node own slots information."}},
		{sub: "info", lines: []string{
			"INFO",
			"    Return information about the cluster."}},
		{sub: "keyslot", lines: []string{
			"KEYSLOT <key>",
			"    Return the hash slot for <key>."}},
		{sub: "meet", lines: []string{
			"MEET <ip> <port> [<bus-port>]",
			"    Connect nodes into a working cluster."}},
		{sub: "myid", lines: []string{
			"MYID",
			"    Return the node id."}},
		{sub: "myshardid", since: "7.2.0", lines: []string{
			"MYSHARDID",
			"    Return the node's shard id."}},
		{sub: "nodes", lines: []string{
			"NODES",
			"    Return cluster configuration seen by node. Output format:",
			"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ..."}},
		{sub: "replicate", lines: []string{
			"REPLICATE <node-id>",
			"    Configure current node as replica to <node-id>."}},
		{sub: "reset", lines: []string{
			"RESET [HARD|SOFT]",
			"    Reset current node (default: soft)."}},
		{sub: "set-config-epoch", lines: []string{
			"SET-CONFIG-EPOCH <epoch>",
			"    Set config epoch of current node."}},
		{sub: "setslot", lines: []string{
			"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
			"    Set slot state."}},
		{sub: "replicas", lines: []string{
			"REPLICAS <node-id>",
			"    Return <node-id> replicas."}},
		{sub: "saveconfig", lines: []string{
			"SAVECONFIG",
			"    Force saving cluster configuration on disk."}},
		{sub: "slots", lines: []string{
			"SLOTS",
			"    Return information about slots range mappings. Each range is made of:",
			"    start, end, master and replicas IP addresses, ports and ids"}},
		{sub: "shards", lines: []string{
			"SHARDS",
			"    Return information about slot range mappings and the nodes associated with them."}},
		{sub: "links", lines: []string{
			"LINKS",
			"    Return information about all network links between this node and its peers.",
			"    Output format is an array where each array element is a map containing attributes of a link"}},
	},
	// raftstream's own: no Redis text.
	"raftstream": {
		{sub: "status", since: "raftstream", lines: []string{
			"STATUS",
			"    Return the Raft state of every shard replica hosted on this node:",
			"    shard, role, term, commit index, applied index, last index, leader id, leader changes."}},
		{sub: "transfer-leader", since: "raftstream", lines: []string{
			"TRANSFER-LEADER <shard> [<node-id>]",
			"    Hand leadership of a shard this node leads to another replica (default: any)."}},
		{sub: "snapshot", since: "raftstream", lines: []string{
			"SNAPSHOT [<shard>]",
			"    Take a Raft snapshot of one or every shard replica hosted on this node."}},
		{sub: "remove-node", since: "raftstream", lines: []string{
			"REMOVE-NODE <node-id>",
			"    Move the replicas of a member to other nodes, hand over its leaderships",
			"    and drop it from the cluster."}},
		{sub: "retention", since: "raftstream", lines: []string{
			"RETENTION SET <pattern> [MAXLEN <n>] [MAXAGE <ms>] [MAXBYTES <bytes>] [KEEPREF|DELREF|ACKED]",
			"    Set the retention policy of the streams matching <pattern>, on every shard.",
			"RETENTION GET <pattern>",
			"    Return the policy set for <pattern>.",
			"RETENTION DEL <pattern>",
			"    Remove the policy set for <pattern>.",
			"RETENTION LIST",
			"    Return every retention policy."}},
		{sub: "backup", since: "raftstream", lines: []string{
			"BACKUP <shard>",
			"    Open a backup of a shard this node leads, at a linearizable point.",
			"BACKUP NEXT",
			"    Return the next chunk of the open backup (null once all was sent).",
			"BACKUP ABORT",
			"    Close the open backup."}},
		{sub: "slots", since: "raftstream", lines: []string{
			"SLOTS MOVE <first>-<last>|<slot> <shard>",
			"    Move the slots, with their keys, to <shard> online; returns the moves' ids.",
			"SLOTS STATUS",
			"    Return the slot map's epoch, the moves in flight with their progress, and the map."}},
		{sub: "shard", since: "raftstream", lines: []string{
			"SHARD ADD [<node-id> ...]",
			"    Add a shard (a Raft group) on the nodes given, or where the controller places it;",
			"    it owns no slot until moves give it some. Returns its number.",
			"SHARD REMOVE <shard>",
			"    Retire a shard that owns no slot and holds no key.",
			"SHARD POLICY [AUTO|OFF [PER-NODE <k>]]",
			"    Show or set the automatic shard policy: about <k> shards per node (nodes sharing a host of few",
			"    CPUs counting as fewer unless PER-NODE is set), slots spread by keys and bytes.",
			"SHARD CONFIG <shard> GET <pattern> | SET <param> <value> [...]",
			"    Read or set the replicated engine parameters of one shard, through its leader."}},
	},
}

// helpLines holds each container's HELP lines for the subcommands the table
// has, built once at init.
var helpLines = func() map[string][]string {
	out := map[string][]string{}
	for parent, blocks := range helpTexts {
		var lines []string
		for _, b := range blocks {
			if b.sub == "" || command.Get(parent+"|"+b.sub) != nil {
				lines = append(lines, b.lines...)
			}
		}
		out[parent] = lines
	}
	return out
}()

// cmdHelp answers CLIENT HELP, CLUSTER HELP, ... (the "help" row of each
// container in helpTexts).
func cmdHelp(s *Server, c *client, argv [][]byte) reply {
	return engine.HelpReply(argv[0], helpLines[strings.ToLower(string(argv[0]))])
}
