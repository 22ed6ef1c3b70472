// cache-anchor: the controller-runtime yardstick for bench/cache.ts.
//
// A minimal controller-runtime operator shaped like the TypeScript side of the
// benchmark: one manager caching every Node and Pod (managedFields stripped), a
// Node controller with 4 workers whose reconcile reads the node from the cache
// and records now − annotation bench/sent. It measures, in this order:
//
//  1. time from manager start to WaitForCacheSync;
//  2. heap (after two GCs) and process RSS once the initial events have drained;
//  3. API requests per second over an idle window (--duration-idle), counted
//     by a wrapper around the REST transport;
//
// then prints READY on stdout, records latencies while the driver patches
// nodes, and on the stdin line REPORT prints one JSON line and exits.
// Driven by bench/cache-anchor.ts; built by build.sh.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const stampAnnotation = "bench/sent"

type report struct {
	SyncSeconds           float64 `json:"syncSeconds"`
	HeapAllocMiB          float64 `json:"heapAllocMiB"`
	HeapInuseMiB          float64 `json:"heapInuseMiB"`
	HeapAllocBeforeMiB    float64 `json:"heapAllocBeforeMiB"`
	RssMiB                float64 `json:"rssMiB"`
	LatencyP50Ms          float64 `json:"latencyP50Ms"`
	LatencyP99Ms          float64 `json:"latencyP99Ms"`
	Samples               int     `json:"samples"`
	RequestsPerSecondIdle float64 `json:"requestsPerSecondIdle"`
	IdleWindowSeconds     float64 `json:"idleWindowSeconds"`
	ControllerRuntime     string  `json:"controllerRuntime"`
	GoVersion             string  `json:"goVersion"`
}

// countingTransport counts every request the manager's clients send.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

// latencies keeps the first sighting of each new stamp per node, so a later
// unrelated update of a stamped node (a kwok heartbeat) is not counted again,
// and stamps written before collection began (by an earlier run) are ignored.
type latencies struct {
	mu      sync.Mutex
	from    int64 // ms; stamps older than this are ignored; 0 = not collecting
	seen    map[string]int64
	samples []int64
}

func (l *latencies) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from = time.Now().UnixMilli()
	l.seen = map[string]int64{}
	l.samples = nil
}

func (l *latencies) observe(node string, sent, now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.from == 0 || sent < l.from || l.seen[node] == sent {
		return
	}
	l.seen[node] = sent
	l.samples = append(l.samples, now-sent)
}

// pct picks like bench/cache.ts: sorted[min(n−1, floor(p/100·n))].
func (l *latencies) figures() (p50, p99 float64, n int) {
	l.mu.Lock()
	s := append([]int64(nil), l.samples...)
	l.mu.Unlock()
	if len(s) == 0 {
		return -1, -1, 0
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pct := func(p float64) float64 {
		i := min(len(s)-1, int(p/100*float64(len(s))))
		return float64(s[i])
	}
	return pct(50), pct(99), len(s)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func heap() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

func crVersion() string {
	// Filled from the build info; "" when built without module info.
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "sigs.k8s.io/controller-runtime" {
				return d.Version
			}
		}
	}
	return ""
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "cache-anchor: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	// A flag set of our own: controller-runtime registers --kubeconfig on flag.CommandLine.
	flags := flag.NewFlagSet("cache-anchor", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the cluster (required)")
	idle := flags.Duration("duration-idle", 20*time.Second, "idle window over which API requests are counted")
	settle := flags.Duration("settle", 3*time.Second, "wait after sync for the initial events to drain before measuring memory")
	_ = flags.Parse(os.Args[1:])
	if *kubeconfig == "" {
		fail("--kubeconfig is required")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("kubeconfig: %v", err)
	}
	var requests atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &requests} })

	before := heap()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		fail("manager: %v", err)
	}

	lat := &latencies{}
	reader := mgr.GetCache()
	err = ctrl.NewControllerManagedBy(mgr).
		Named("latency").
		For(&corev1.Node{}).
		// Pods are cached and watched, as on the TypeScript side, but enqueue nothing.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return nil })).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var node corev1.Node
			if err := reader.Get(ctx, req.NamespacedName, &node); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if v := node.Annotations[stampAnnotation]; v != "" {
				if sent, err := strconv.ParseInt(v, 10, 64); err == nil && sent > 0 {
					lat.observe(node.Name, sent, time.Now().UnixMilli())
				}
			}
			return reconcile.Result{}, nil
		}))
	if err != nil {
		fail("controller: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Register both informers before start so WaitForCacheSync covers both
	// (the controller's own sources register theirs asynchronously at start).
	for _, obj := range []client.Object{&corev1.Node{}, &corev1.Pod{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			fail("informer %T: %v", obj, err)
		}
	}

	t0 := time.Now()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(ctx) }()
	select {
	case ok := <-synced:
		if !ok {
			fail("cache did not sync")
		}
	case err := <-done:
		fail("manager stopped before sync: %v", err)
	}
	syncSeconds := time.Since(t0).Seconds()

	time.Sleep(*settle)
	m := heap()
	rss := rssMiB()

	c0 := requests.Load()
	t1 := time.Now()
	time.Sleep(*idle)
	idleSeconds := time.Since(t1).Seconds()
	rps := float64(requests.Load()-c0) / idleSeconds

	lat.start()
	fmt.Println("READY")

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) != "REPORT" {
			continue
		}
		p50, p99, n := lat.figures()
		out, _ := json.Marshal(report{
			SyncSeconds:           syncSeconds,
			HeapAllocMiB:          mib(m.HeapAlloc),
			HeapInuseMiB:          mib(m.HeapInuse),
			HeapAllocBeforeMiB:    mib(before.HeapAlloc),
			RssMiB:                rss,
			LatencyP50Ms:          p50,
			LatencyP99Ms:          p99,
			Samples:               n,
			RequestsPerSecondIdle: rps,
			IdleWindowSeconds:     idleSeconds,
			ControllerRuntime:     crVersion(),
			GoVersion:             runtime.Version(),
		})
		fmt.Println(string(out))
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		os.Exit(0)
	}
	// stdin closed without REPORT: the driver is gone; stop quietly.
	fail("stdin closed before REPORT")
}
