// wiremix is the traffic of tests/e2e/test_wire.py: one process that makes every kind of TCP
// call a Go service makes (plain HTTP/1.1 with and without bodies, large headers, a request
// that carries its own traceparent, HTTP/1.1 and HTTP/2 over TLS, cleartext HTTP/2, a protocol
// that is not HTTP), and the servers that answer them and say exactly what arrived. gospan's
// socket-layer writer may add a traceparent to the plain HTTP/1 requests and must leave every
// other byte alone; the client checks each answer byte for byte and reports.
//
//	wiremix -servers            prints {"plain": URL, "tls": URL, "h2c": URL, "raw": ADDR}
//	wiremix -addr ADDR -plain URL -tls URL -h2c URL -raw ADDR
//	                            prints "listening on HOST:PORT" and serves GET /run: one round
//	                            of every call, as JSON
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// echo is what a server saw of one request.
type echo struct {
	Method        string   `json:"method"`
	Path          string   `json:"path"`
	Proto         string   `json:"proto"`
	ContentLength int64    `json:"content_length"`
	Chunked       bool     `json:"chunked"`
	BodyLen       int      `json:"body_len"`
	BodySHA256    string   `json:"body_sha256"`
	Traceparent   []string `json:"traceparent"`
	Tracestate    []string `json:"tracestate"`
	Big           int      `json:"big"` // length of the X-Big header
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sum := sha256.Sum256(body)
	e := echo{
		Method: r.Method, Path: r.URL.Path, Proto: r.Proto, ContentLength: r.ContentLength,
		Chunked: len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked",
		BodyLen: len(body), BodySHA256: hex.EncodeToString(sum[:]),
		Traceparent: r.Header.Values("Traceparent"), Tracestate: r.Header.Values("Tracestate"),
		Big: len(r.Header.Get("X-Big")),
	}
	w.Header().Set("Content-Type", "application/json")
	// X-Status: the status to answer with (test_server_protocols.py reads it back from spans).
	if code, err := strconv.Atoi(r.Header.Get("X-Status")); err == nil && code >= 200 && code <= 599 {
		w.WriteHeader(code)
	}
	_ = json.NewEncoder(w).Encode(e)
}

// selfSigned makes a certificate for 127.0.0.1, valid for a day.
func selfSigned() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wiremix"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func listen() net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	return l
}

func serve() {
	mux := http.NewServeMux()
	mux.HandleFunc("/", echoHandler)

	plain := listen()
	go func() { log.Fatal((&http.Server{Handler: mux}).Serve(plain)) }()

	secure := listen()
	ts := &http.Server{Handler: mux, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{selfSigned()}, NextProtos: []string{"h2", "http/1.1"},
	}}
	go func() { log.Fatal(ts.ServeTLS(secure, "", "")) }()

	h2c := listen()
	hs := &http.Server{Handler: mux, Protocols: new(http.Protocols)}
	hs.Protocols.SetHTTP1(true)
	hs.Protocols.SetUnencryptedHTTP2(true)
	go func() { log.Fatal(hs.Serve(h2c)) }()

	raw := listen()
	go func() {
		for {
			c, err := raw.Accept()
			if err != nil {
				log.Fatal(err)
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()

	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{
		"plain": "http://" + plain.Addr().String(), "tls": "https://" + secure.Addr().String(),
		"h2c": "http://" + h2c.Addr().String(), "raw": raw.Addr().String(),
	})
	select {}
}

// result is one call as the client judged it.
type result struct {
	Name        string   `json:"name"`
	OK          bool     `json:"ok"`
	Error       string   `json:"error,omitempty"`
	Proto       string   `json:"proto,omitempty"`
	Traceparent []string `json:"traceparent"`
	Tracestate  []string `json:"tracestate"`
}

type client struct {
	plain, secure, h2c, raw string
	h1                      *http.Client // one shared keep-alive transport, as services have
	h1tls                   *http.Client // TLS, HTTP/1.1 only
	h2tls                   *http.Client // TLS, HTTP/2
	h2cc                    *http.Client // cleartext HTTP/2 with prior knowledge
}

// bodyText looks like requests on purpose: a writer that took body bytes for a request line
// would show here.
func bodyText(n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString("GET /not-a-request HTTP/1.1\r\nHost: body\r\n\r\n0123456789abcdef")
	}
	return b.Bytes()[:n]
}

func (c *client) do(name string, hc *http.Client, method, url string, body []byte, chunked bool,
	hdr http.Header, wantProto string) result {
	res := result{Name: name}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // hides the length: the client sends chunks
		}
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer resp.Body.Close()
	var e echo
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		res.Error = fmt.Sprintf("status %d, answer not understood: %v", resp.StatusCode, err)
		return res
	}
	res.Proto, res.Traceparent, res.Tracestate = e.Proto, e.Traceparent, e.Tracestate
	sum := sha256.Sum256(body)
	var problems []string
	if resp.StatusCode != 200 {
		problems = append(problems, fmt.Sprintf("status %d", resp.StatusCode))
	}
	if e.Method != method || !strings.HasSuffix(url, e.Path) {
		problems = append(problems, fmt.Sprintf("server saw %s %s", e.Method, e.Path))
	}
	if e.BodyLen != len(body) || e.BodySHA256 != hex.EncodeToString(sum[:]) {
		problems = append(problems, fmt.Sprintf("body: %d bytes sent, %d arrived, other bytes",
			len(body), e.BodyLen))
	}
	if chunked && !e.Chunked && e.Proto == "HTTP/1.1" {
		problems = append(problems, "the body was not sent chunked")
	}
	if want := len(hdr.Get("X-Big")); e.Big != want {
		problems = append(problems, fmt.Sprintf("X-Big: %d bytes sent, %d arrived", want, e.Big))
	}
	if wantProto != "" && e.Proto != wantProto {
		problems = append(problems, fmt.Sprintf("protocol %s, expected %s", e.Proto, wantProto))
	}
	res.OK = len(problems) == 0
	res.Error = strings.Join(problems, "; ")
	return res
}

// rawCall sends bytes that look like HTTP/1 requests (two, pipelined) over a protocol that is
// not HTTP, on a connection of its own, and checks the echo is the very same bytes.
func (c *client) rawCall() result {
	res := result{Name: "raw-tcp", Traceparent: []string{}}
	conn, err := net.DialTimeout("tcp", c.raw, 5*time.Second)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	msg := []byte("GET /raw HTTP/1.1\r\nHost: raw\r\n\r\nPOST /raw HTTP/1.1\r\nHost: raw\r\n" +
		"Content-Length: 5\r\n\r\nhello")
	for i := 0; i < 3; i++ {
		if _, err := conn.Write(msg); err != nil {
			res.Error = err.Error()
			return res
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(conn, got); err != nil {
			res.Error = err.Error()
			return res
		}
		if !bytes.Equal(got, msg) {
			res.Error = fmt.Sprintf("echo differs: sent %q, got back %q", msg, got)
			return res
		}
	}
	res.OK = true
	return res
}

func (c *client) round() []result {
	big := http.Header{"X-Big": {strings.Repeat("b", 6000)}}
	own := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	calls := []func() result{
		func() result { return c.do("get", c.h1, "GET", c.plain+"/get", nil, false, nil, "HTTP/1.1") },
		func() result {
			return c.do("post-length", c.h1, "POST", c.plain+"/post", bodyText(100000), false, nil, "HTTP/1.1")
		},
		func() result {
			return c.do("post-chunked", c.h1, "POST", c.plain+"/chunked", bodyText(70000), true, nil, "HTTP/1.1")
		},
		func() result { return c.do("big-headers", c.h1, "GET", c.plain+"/big", nil, false, big, "HTTP/1.1") },
		func() result {
			return c.do("own-traceparent", c.h1, "GET", c.plain+"/own", nil, false, own, "HTTP/1.1")
		},
		func() result {
			return c.do("tls-http1", c.h1tls, "POST", c.secure+"/tls1", bodyText(3000), false, nil, "HTTP/1.1")
		},
		func() result {
			return c.do("tls-http2", c.h2tls, "POST", c.secure+"/tls2", bodyText(3000), false, nil, "HTTP/2.0")
		},
		func() result {
			return c.do("h2c", c.h2cc, "POST", c.h2c+"/h2c", bodyText(3000), false, nil, "HTTP/2.0")
		},
		c.rawCall,
	}
	out := make([]result, len(calls))
	var wg sync.WaitGroup
	for i, f := range calls {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = f() }()
	}
	wg.Wait()
	return out
}

func runClient(addr string, c *client) {
	insecure := &tls.Config{InsecureSkipVerify: true}
	c.h1 = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	c.h1tls = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}},
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
	c.h2tls = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: insecure, ForceAttemptHTTP2: true,
	}}
	h2t := &http.Transport{Protocols: new(http.Protocols)}
	h2t.Protocols.SetUnencryptedHTTP2(true)
	c.h2cc = &http.Client{Timeout: 15 * time.Second, Transport: h2t}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /run", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.round())
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", l.Addr())
	log.Fatal((&http.Server{Handler: mux}).Serve(l))
}

func main() {
	log.SetFlags(0)
	servers := flag.Bool("servers", false, "run the servers and print their addresses")
	addr := flag.String("addr", "127.0.0.1:0", "where /run is served")
	c := &client{}
	flag.StringVar(&c.plain, "plain", "", "plain HTTP/1.1 server URL")
	flag.StringVar(&c.secure, "tls", "", "TLS server URL (HTTP/1.1 and HTTP/2)")
	flag.StringVar(&c.h2c, "h2c", "", "cleartext HTTP/2 server URL")
	flag.StringVar(&c.raw, "raw", "", "raw TCP echo address")
	flag.Parse()
	if *servers {
		serve()
	}
	runClient(*addr, c)
}
