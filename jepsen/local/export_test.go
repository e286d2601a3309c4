package local

// Ping is ping, for the external tests.
var Ping = ping
