// Command raftstream is the raftstream server.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "raftstream: server not built yet")
	os.Exit(1)
}
