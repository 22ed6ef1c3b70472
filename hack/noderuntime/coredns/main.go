// Command coredns is upstream CoreDNS's main with only the plugins cluster DNS
// needs instead of all of them (no cloud back ends: a smaller, faster build).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	// The order a query passes through them, kept as upstream's plugin.cfg has it
	// (e.g. loadbalance before cache, so cached answers are shuffled too).
	dnsserver.Directives = []string{
		"reload", "ready", "health", "errors", "log", "loadbalance", "cache", "hosts", "kubernetes", "forward",
	}
}

func main() {
	coremain.Run()
}
