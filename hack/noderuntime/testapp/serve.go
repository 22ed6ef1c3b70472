package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// serve answers until SIGTERM, then logs it and exits 0, as a well-behaved pod does.
func serve(args []string) error {
	port := 8080
	if p, err := strconv.Atoi(os.Getenv("PORT")); err == nil {
		port = p
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.IntVar(&port, "port", port, "port to listen on")
	address := fs.String("address", "", "address to listen on (default: all of the pod's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	hostname, err := os.Hostname()
	if err != nil {
		return err
	}
	logger := log.New(os.Stdout, "", log.LstdFlags|log.LUTC)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, hostname)
	})
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger.Printf("%s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		mux.ServeHTTP(w, r)
	})
	server := &http.Server{Addr: net.JoinHostPort(*address, strconv.Itoa(port)), Handler: logged, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	failed := make(chan error, 1)
	go func() { failed <- server.ListenAndServe() }()
	logger.Printf("serving on %s as %s", server.Addr, hostname)
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	logger.Printf("received SIGTERM, shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Printf("stopped")
	return nil
}
