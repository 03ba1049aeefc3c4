// receiver is the benchmark's OTLP/HTTP endpoint: it takes every ExportTraceServiceRequest
// (protobuf), counts the spans in it and throws it away (and the data points of every
// ExportMetricsServiceRequest), so that gospan and the OpenTelemetry Go
// SDK export to the same place and neither pays for a real backend. It decodes only the three
// nested length-delimited fields that lead to a span, and each span's kind (so that a benchmark
// can tell PRODUCER spans from CONSUMER ones); a body it cannot walk is answered 400.
//
//	receiver -addr 127.0.0.1:0      prints "listening on ADDR"; GET /stats gives the counts,
//	                                spans by kind among them ("kinds": {"producer": N, ...})
package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
)

var errMalformed = errors.New("malformed protobuf")

// walk calls fn with every field of the message B: its number, and its value (a varint's) or
// payload (a length-delimited field's); fixed-width fields are skipped.
func walk(b []byte, fn func(num, value uint64, payload []byte) error) error {
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 {
			return errMalformed
		}
		b = b[n:]
		var value uint64
		var payload []byte
		switch key & 7 {
		case 0: // varint
			value, n = uvarint(b)
			if n <= 0 {
				return errMalformed
			}
			b = b[n:]
		case 1: // 64-bit
			if len(b) < 8 {
				return errMalformed
			}
			b = b[8:]
			continue
		case 5: // 32-bit
			if len(b) < 4 {
				return errMalformed
			}
			b = b[4:]
			continue
		case 2: // length-delimited
			l, n := uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errMalformed
			}
			payload = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			return errMalformed
		}
		if err := fn(key>>3, value, payload); err != nil {
			return err
		}
	}
	return nil
}

// field calls fn with the payload of every length-delimited field NUM in the message B.
func field(b []byte, num uint64, fn func([]byte) error) error {
	return walk(b, func(n, _ uint64, payload []byte) error {
		if n == num && payload != nil {
			return fn(payload)
		}
		return nil
	})
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// Span.kind's values (SpanKind), as /stats names them.
var kindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// countSpans walks ExportTraceServiceRequest.resource_spans(1) -> ResourceSpans.scope_spans(2)
// -> ScopeSpans.spans(2), and counts each span by its kind (Span.kind, field 6) into KINDS.
func countSpans(body []byte, kinds []int64) (int64, error) {
	var n int64
	err := field(body, 1, func(rs []byte) error {
		return field(rs, 2, func(ss []byte) error {
			return field(ss, 2, func(span []byte) error {
				n++
				kind := uint64(0)
				err := walk(span, func(num, value uint64, _ []byte) error {
					if num == 6 {
						kind = value
					}
					return nil
				})
				if err == nil && kind < uint64(len(kinds)) {
					kinds[kind]++
				}
				return err
			})
		})
	})
	return n, err
}

// countPoints counts the data points of an ExportMetricsServiceRequest: resource_metrics (1),
// scope_metrics (2), metrics (2), then the data's data_points (1) in a gauge (5), sum (7) or
// histogram (9).
func countPoints(body []byte) (int64, error) {
	var n int64
	err := field(body, 1, func(rm []byte) error {
		return field(rm, 2, func(sm []byte) error {
			return field(sm, 2, func(m []byte) error {
				for _, data := range []uint64{5, 7, 9} {
					err := field(m, data, func(d []byte) error {
						return field(d, 1, func([]byte) error { n++; return nil })
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
		})
	})
	return n, err
}

type stats struct {
	Spans, Requests, Bytes, Refused, MetricPoints, MetricRequests atomic.Int64
	Kinds                                                         [len(kindNames)]atomic.Int64
}

// readBody is the request's body, gunzipped when it says it is gzip.
func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		rd = zr
	}
	return io.ReadAll(rd)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	var st stats

	// An empty Export*ServiceResponse is full success, for traces and metrics alike.
	serve := func(count func([]byte) (int64, error), items, requests *atomic.Int64) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, err := readBody(r)
			var n int64
			if err == nil {
				n, err = count(body)
			}
			if err != nil {
				st.Refused.Add(1)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			items.Add(n)
			requests.Add(1)
			st.Bytes.Add(int64(len(body)))
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK)
		}
	}
	mux := http.NewServeMux()
	countTraces := func(body []byte) (int64, error) {
		var kinds [len(kindNames)]int64
		n, err := countSpans(body, kinds[:])
		if err == nil {
			for i, k := range kinds {
				st.Kinds[i].Add(k)
			}
		}
		return n, err
	}
	mux.HandleFunc("POST /v1/traces", serve(countTraces, &st.Spans, &st.Requests))
	mux.HandleFunc("POST /v1/metrics", serve(countPoints, &st.MetricPoints, &st.MetricRequests))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		kinds := map[string]int64{}
		for i, name := range kindNames {
			kinds[name] = st.Kinds[i].Load()
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"spans": st.Spans.Load(), "requests": st.Requests.Load(),
			"bytes": st.Bytes.Load(), "refused": st.Refused.Load(),
			"metric_points": st.MetricPoints.Load(), "metric_requests": st.MetricRequests.Load(),
			"kinds": kinds,
		})
	})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("receiver: cannot listen on '%s': %v", *addr, err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
