// The test control plane's keys and certificates, made fresh for each start: a CA, the API
// server's serving certificate for 127.0.0.1, an admin client certificate (system:masters), and
// the service-account signing key. Go's standard library, so the tests need no openssl.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

const validity = 7 * 24 * time.Hour

type pair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newKey() *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(err)
	return key
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	check(err)
	return n
}

func sign(template *x509.Certificate, parent *pair) *pair {
	key := newKey()
	template.SerialNumber = serial()
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(validity)
	signer, signerCert := key, template
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signerCert, &key.PublicKey, signer)
	check(err)
	cert, err := x509.ParseCertificate(der)
	check(err)
	return &pair{cert, key}
}

func write(dir, name, kind string, der []byte) {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	check(os.WriteFile(filepath.Join(dir, name), data, 0o600))
}

func save(dir, name string, p *pair) {
	write(dir, name+".crt", "CERTIFICATE", p.cert.Raw)
	der, err := x509.MarshalECPrivateKey(p.key)
	check(err)
	write(dir, name+".key", "EC PRIVATE KEY", der)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "certs:", err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: certs DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	check(os.MkdirAll(dir, 0o700))
	ca := sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "gpuconf-test-ca"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil)
	save(dir, "ca", ca)
	save(dir, "apiserver", sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca))
	save(dir, "admin", sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "gpuconf-test-admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca))
	serviceAccount := newKey()
	der, err := x509.MarshalECPrivateKey(serviceAccount)
	check(err)
	write(dir, "service-account.key", "EC PRIVATE KEY", der)
	public, err := x509.MarshalPKIXPublicKey(&serviceAccount.PublicKey)
	check(err)
	write(dir, "service-account.pub", "PUBLIC KEY", public)
}
