// Command testapp is the one program inside the test image for real nodes: a
// web server with a preStop hook, and the client side (HTTP and DNS) to check
// it from another pod. Static and stdlib-only, so the image is this file alone
// (Debian's static busybox wget crashes on these machines).
package main

import (
	"fmt"
	"os"
)

const usage = `usage: testapp COMMAND [flags]
  serve   [--port N] [--address A]   HTTP on N ($PORT, else 8080): / answers the hostname, /healthz 200
  prestop --file F [--sleep S]       append "<hostname> <time>" to F, then sleep S seconds
  get     [--token-file F] [--cacert F | --insecure] URL
                                     GET URL, print the status and the body; exit 1 if no answer
  resolve NAME                       print NAME's addresses; exit 1 if it does not resolve
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	commands := map[string]func([]string) error{
		"serve":   serve,
		"prestop": prestop,
		"get":     get,
		"resolve": resolve,
	}
	run, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "testapp %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
