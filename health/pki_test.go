package health

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is a throw-away CA with a server certificate and a client
// certificate, the client's files written to a temporary directory as a
// tracker's configuration would name them.
type testPKI struct {
	pool           *x509.CertPool
	server         tls.Certificate
	caFile         string
	certFile       string
	keyFile        string
	otherCAFile    string // a CA that signed nothing here
	garbageFile    string // not PEM
	mismatchedCert string // the client certificate's file paired with the wrong key below
	mismatchedKey  string
}

// newTestPKI's server certificate names only "kubernetes", as a kubeadm API
// server certificate does not name 127.0.0.1: verifying it needs server_name.
func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	serial := int64(0)
	sign := func(tmpl, parent *x509.Certificate, pub, priv any) (*x509.Certificate, []byte) {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, der
	}
	newCA := func(name string) (*x509.Certificate, []byte, *ecdsa.PrivateKey) {
		k := newKey()
		c, der := sign(&x509.Certificate{
			Subject:               pkix.Name{CommonName: name},
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign,
		}, nil, &k.PublicKey, k)
		return c, der, k
	}

	p := &testPKI{pool: x509.NewCertPool()}
	ca, caDER, caKey := newCA("vipd test CA")
	p.pool.AddCert(ca)
	p.caFile = write("ca.crt", "CERTIFICATE", caDER)
	_, otherDER, _ := newCA("unrelated CA")
	p.otherCAFile = write("other-ca.crt", "CERTIFICATE", otherDER)
	p.garbageFile = filepath.Join(dir, "garbage.crt")
	if err := os.WriteFile(p.garbageFile, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	sk := newKey()
	_, sDER := sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"kubernetes"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &sk.PublicKey, caKey)
	p.server = tls.Certificate{Certificate: [][]byte{sDER}, PrivateKey: sk}

	ck := newKey()
	_, cDER := sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "vipd"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &ck.PublicKey, caKey)
	p.certFile = write("client.crt", "CERTIFICATE", cDER)
	p.keyFile = write("client.key", "PRIVATE KEY", keyDER(ck))
	p.mismatchedCert = p.certFile
	p.mismatchedKey = write("wrong.key", "PRIVATE KEY", keyDER(newKey()))
	return p
}

// serverTLS is the server side: the "kubernetes" certificate, client
// certificates required and verified against the CA.
func (p *testPKI) serverTLS() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.pool,
	}
}
