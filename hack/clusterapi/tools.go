//go:build tools

// Package tools pins the Cluster API manager (its core/ main package) into this module's graph.
package tools

import _ "sigs.k8s.io/cluster-api/core"
