package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// prestop leaves proof that the hook ran (one line per run), then holds the
// container as long as asked, as a draining endpoint would.
func prestop(args []string) error {
	fs := flag.NewFlagSet("prestop", flag.ContinueOnError)
	file := fs.String("file", "", "file to append the line to")
	sleep := fs.Float64("sleep", 0, "seconds to sleep after writing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("--file is required")
	}
	hostname, err := os.Hostname()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %s\n", hostname, time.Now().UTC().Format(time.RFC3339))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	time.Sleep(time.Duration(*sleep * float64(time.Second)))
	return nil
}

// get prints the status line and the body of any answer; only no answer at all is an error,
// so a caller can check a 401 or 403 as well as a 200.
func get(args []string) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	tokenFile := fs.String("token-file", "", "send the file's content as a bearer token")
	caCert := fs.String("cacert", "", "trust this PEM file's certificates")
	insecure := fs.Bool("insecure", false, "do not verify the server's certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("one URL expected")
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: *insecure} //nolint:gosec // asked for by --insecure
	if *caCert != "" {
		pem, err := os.ReadFile(*caCert)
		if err != nil {
			return err
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", *caCert)
		}
	}
	req, err := http.NewRequest(http.MethodGet, fs.Arg(0), nil)
	if err != nil {
		return err
	}
	if *tokenFile != "" {
		token, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	_, err = io.Copy(os.Stdout, resp.Body)
	return err
}

func resolve(args []string) error {
	if len(args) != 1 {
		return errors.New("one name expected")
	}
	addrs, err := net.LookupHost(args[0])
	if err != nil {
		return err
	}
	for _, a := range addrs {
		fmt.Println(a)
	}
	return nil
}
