// The workload real nodes' tests run: one static binary, the standard library only.
module nodewarden.dev/hack/noderuntime/testapp

go 1.26.0
