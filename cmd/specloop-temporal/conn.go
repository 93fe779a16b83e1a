package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
)

// apiKeyVar is the variable that holds the Temporal API key when
// --temporal-api-key-file does not; the Temporal CLI reads the same one.
const apiKeyVar = "TEMPORAL_API_KEY"

// connFlags say how serve and worker reach the Temporal frontend beyond
// its address: TLS (Temporal Cloud, a self-hosted cluster with TLS), a
// client certificate (mutual TLS) or an API key.
type connFlags struct {
	tls        bool
	ca         string
	cert, key  string
	serverName string
	apiKeyFile string

	apiKeyRead string // the API key options read, for secrets
}

// secrets are the values a worker's runs are redacted of besides its
// variables that hold secrets: the API key options read from
// --temporal-api-key-file (a file a run's command may be able to read),
// whose value no variable names.
func (f *connFlags) secrets() []string {
	if f.apiKeyRead == "" {
		return nil
	}
	return []string{f.apiKeyRead}
}

func (f *connFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.tls, "temporal-tls", false, "connect to the Temporal frontend over TLS, trusting the system's certificate authorities (implied by the other --temporal-tls-* and API key flags)")
	fs.StringVar(&f.ca, "temporal-tls-ca", "", "a PEM file of the certificate authorities the frontend's certificate must chain to, instead of the system's")
	fs.StringVar(&f.cert, "temporal-tls-cert", "", "a PEM client certificate for mutual TLS, with --temporal-tls-key")
	fs.StringVar(&f.key, "temporal-tls-key", "", "the PEM private key of --temporal-tls-cert")
	fs.StringVar(&f.serverName, "temporal-tls-server-name", "", "the name the frontend's certificate must carry (default: the host of --temporal-address)")
	fs.StringVar(&f.apiKeyFile, "temporal-api-key-file", "", "a file holding the API key sent to the frontend over TLS (default: $"+apiKeyVar+" when set)")
}

// options returns the client's connection options and credentials for
// the frontend at address; an unreadable or inconsistent flag is an error
// that names it. No TLS flag and no API key: a plain connection, as a
// cluster on loopback has.
func (f *connFlags) options(address string) (client.ConnectionOptions, client.Credentials, error) {
	var creds client.Credentials
	key, err := f.apiKey()
	if err != nil {
		return client.ConnectionOptions{}, nil, err
	}
	f.apiKeyRead = key
	if key != "" {
		creds = client.NewAPIKeyStaticCredentials(key)
	}
	if !f.tls && f.ca == "" && f.cert == "" && f.key == "" && f.serverName == "" && key == "" {
		return client.ConnectionOptions{}, nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return client.ConnectionOptions{}, nil, fmt.Errorf("--temporal-address %q: %w", address, err)
		}
		cfg.ServerName = host
	}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return client.ConnectionOptions{}, nil, fmt.Errorf("--temporal-tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return client.ConnectionOptions{}, nil, fmt.Errorf("--temporal-tls-ca: %s holds no PEM certificate", f.ca)
		}
	}
	switch {
	case f.cert != "" && f.key != "":
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return client.ConnectionOptions{}, nil, fmt.Errorf("--temporal-tls-cert, --temporal-tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case f.cert != "":
		return client.ConnectionOptions{}, nil, errors.New("--temporal-tls-cert needs --temporal-tls-key")
	case f.key != "":
		return client.ConnectionOptions{}, nil, errors.New("--temporal-tls-key needs --temporal-tls-cert")
	}
	return client.ConnectionOptions{TLS: cfg}, creds, nil
}

// apiKey is the API key of --temporal-api-key-file, else of apiKeyVar,
// "" for none. It never travels on a command line, where other users of
// the machine would see it.
func (f *connFlags) apiKey() (string, error) {
	if f.apiKeyFile == "" {
		return strings.TrimSpace(os.Getenv(apiKeyVar)), nil
	}
	data, err := os.ReadFile(f.apiKeyFile)
	if err != nil {
		return "", fmt.Errorf("--temporal-api-key-file: %w", err)
	}
	key := strings.TrimSpace(string(data))
	if key == "" || strings.ContainsAny(key, "\r\n") {
		return "", fmt.Errorf("--temporal-api-key-file: %s does not hold one API key on one line", f.apiKeyFile)
	}
	return key, nil
}
