// h2server serves HTTP/2 over TLS (a certificate for 127.0.0.1 made at start) with net/http's
// own HTTP/2 server, for test_go_versions.py's HTTP/2 cells: it builds with every Go release
// from 1.17 on. It prints "listening on ADDR" once it accepts connections. Every request is
// answered with the status its X-Status header asks for (200 when none), and its protocol. A
// request with "X-Panic: through" panics in the handler, which net/http's HTTP/2 server
// recovers (it resets the stream); with "X-Panic: recovered" the handler recovers its own panic
// and answers 500.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

func certificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func handle(w http.ResponseWriter, r *http.Request) {
	switch r.Header.Get("X-Panic") {
	case "through":
		panic("left to net/http")
	case "recovered":
		defer func() {
			if v := recover(); v != nil {
				http.Error(w, fmt.Sprint("recovered: ", v), http.StatusInternalServerError)
			}
		}()
		panic("recovered inside the handler")
	}
	if code, err := strconv.Atoi(r.Header.Get("X-Status")); err == nil && code >= 200 && code <= 599 {
		w.WriteHeader(code)
	}
	fmt.Fprintf(w, "%s %s\n", r.Proto, r.URL.Path)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	cert, err := certificate()
	if err != nil {
		log.Fatalf("cannot make a certificate: %v", err)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("cannot listen on %s: %v", *addr, err)
	}
	srv := &http.Server{
		Handler:   http.HandlerFunc(handle),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
	}
	fmt.Fprintf(os.Stdout, "listening on %s\n", l.Addr())
	log.Fatal(srv.ServeTLS(l, "", ""))
}
