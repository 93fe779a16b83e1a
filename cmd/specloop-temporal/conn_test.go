package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/specloop/specloop/wiring"
)

// frontend is a Temporal frontend that answers GetSystemInfo (what a
// client's Dial asks first) and records the authorization it was sent.
type frontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu    sync.Mutex
	auths []string
}

func (f *frontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.auths = append(f.auths, strings.Join(md.Get("authorization"), ","))
	f.mu.Unlock()
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// pki is a certificate authority and what it signed, as PEM files in dir.
type pki struct {
	ca                            *x509.Certificate
	caKey                         *ecdsa.PrivateKey
	dir                           string
	caFile, serverCert, serverKey string
	clientCert, clientKey         string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	var err error
	if p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	p.serverCert, p.serverKey = p.sign(t, "server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = p.sign(t, "client", x509.ExtKeyUsageClientAuth)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sign makes a certificate for 127.0.0.1 and "frontend.test" of usage use.
func (p *pki) sign(t *testing.T, name string, use x509.ExtKeyUsage) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{use},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"frontend.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &k.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
}

// serveFrontend serves f over TLS with the server certificate of p,
// asking for a client certificate signed by p when mutual is set.
func serveFrontend(t *testing.T, p *pki, f *frontend, mutual bool) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if mutual {
		cfg.ClientCAs = x509.NewCertPool()
		cfg.ClientCAs.AddCert(p.ca)
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	workflowservice.RegisterWorkflowServiceServer(s, f)
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

func dialWith(t *testing.T, cf connFlags, address string) error {
	t.Helper()
	conn, creds, err := cf.options(address)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: address, ConnectionOptions: conn, Credentials: creds})
	if err == nil {
		c.Close()
	}
	return err
}

// serve and worker reach a frontend that asks for TLS with a client
// certificate (mutual TLS, as a self-hosted cluster does) and one that
// takes an API key over TLS (as Temporal Cloud does), trusting only the
// CA they are given; without the CA, the certificate or over plain text
// they do not get through.
func TestTemporalConnectionOverTLS(t *testing.T) {
	p := newPKI(t)
	f := &frontend{}
	mtls := serveFrontend(t, p, f, true)
	if err := dialWith(t, connFlags{ca: p.caFile, cert: p.clientCert, key: p.clientKey}, mtls); err != nil {
		t.Fatalf("mutual TLS with the CA and a client certificate: %v", err)
	}
	if err := dialWith(t, connFlags{ca: p.caFile}, mtls); err == nil {
		t.Fatal("mutual TLS without a client certificate got through")
	}
	if err := dialWith(t, connFlags{cert: p.clientCert, key: p.clientKey}, mtls); err == nil {
		t.Fatal("a frontend whose CA was not given was trusted")
	}
	if err := dialWith(t, connFlags{}, mtls); err == nil {
		t.Fatal("plain text got through to a TLS frontend")
	}

	keyed := serveFrontend(t, p, f, false)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("tk-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.auths = nil
	f.mu.Unlock()
	if err := dialWith(t, connFlags{ca: p.caFile, apiKeyFile: keyFile}, keyed); err != nil {
		t.Fatalf("an API key over TLS: %v", err)
	}
	t.Setenv(apiKeyVar, "tk-from-the-environment")
	if err := dialWith(t, connFlags{ca: p.caFile, serverName: "frontend.test"}, keyed); err != nil {
		t.Fatalf("the API key of $%s, the server name given: %v", apiKeyVar, err)
	}
	f.mu.Lock()
	auths := f.auths
	f.mu.Unlock()
	if len(auths) < 2 || auths[0] != "Bearer tk-0123456789" || auths[len(auths)-1] != "Bearer tk-from-the-environment" {
		t.Fatalf("the frontend was sent %q, want the file's key then the environment's, as bearer tokens", auths)
	}
}

// A flag that cannot be used is an error that names it, before any
// connection.
func TestTemporalConnectionFlagsChecked(t *testing.T) {
	p := newPKI(t)
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(apiKeyVar, "")
	for _, c := range []struct {
		f    connFlags
		want string
	}{
		{connFlags{cert: p.clientCert}, "--temporal-tls-cert needs --temporal-tls-key"},
		{connFlags{key: p.clientKey}, "--temporal-tls-key needs --temporal-tls-cert"},
		{connFlags{cert: p.clientCert, key: p.serverKey}, "--temporal-tls-cert, --temporal-tls-key"},
		{connFlags{ca: empty}, "--temporal-tls-ca"},
		{connFlags{ca: filepath.Join(p.dir, "missing.pem")}, "--temporal-tls-ca"},
		{connFlags{apiKeyFile: empty}, "--temporal-api-key-file"},
		{connFlags{tls: true}, "--temporal-address"},
	} {
		address := "127.0.0.1:7233"
		if c.want == "--temporal-address" {
			address = "no-port"
		}
		if _, _, err := c.f.options(address); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.f, err, c.want)
		}
	}
	if conn, creds, err := (&connFlags{}).options("127.0.0.1:7233"); err != nil || conn.TLS != nil || creds != nil {
		t.Errorf("no flag: %+v, %v, %v; want a plain connection", conn, creds, err)
	}
}

// The API key read from --temporal-api-key-file is one of the worker's
// secrets, so a run whose command printed the file (under /etc, say,
// which commands may read) has it redacted from its transcript and check
// output as the environment's keys are; none is read, none is added.
func TestTemporalAPIKeyFileIsASecret(t *testing.T) {
	t.Setenv(apiKeyVar, "")
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("tk-from-a-file-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := connFlags{apiKeyFile: keyFile}
	if _, _, err := f.options("127.0.0.1:7233"); err != nil {
		t.Fatal(err)
	}
	red := wiring.Config{Secrets: f.secrets()}.Redactor()
	if got, _ := red.Text("cat says tk-from-a-file-0123456789"); strings.Contains(got, "0123456789") {
		t.Errorf("the key was not redacted: %q", got)
	}
	var none connFlags
	if _, _, err := none.options("127.0.0.1:7233"); err != nil || none.secrets() != nil {
		t.Errorf("without a key: secrets %q, %v", none.secrets(), err)
	}
}
