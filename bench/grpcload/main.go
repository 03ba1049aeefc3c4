// grpcload is the load generator of make bench's grpc part (bench/run): unary
// grpc.testing.TestService/UnaryCall calls with a small payload to bench/grpcserver, a fixed
// number of calls in flight at all times spread over a fixed number of keep-alive connections,
// for a given time or a given number of calls. What wrk is to the HTTP parts.
//
//	grpcload -addr HOST:PORT [-conns 1] [-concurrency 64] [-duration 6s | -calls N] [-size 32]
//
// Each connection is a grpc.ClientConn of its own (one HTTP/2 connection), made and ready before
// the clock starts, without a call: the server sees only the measured calls. Calls in flight when
// the time is up are waited for and counted, so the calls printed are every call the server
// answered. One JSON line on stdout: calls, errors (and the first one), seconds, calls per
// second, latency percentiles in microseconds.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

type result struct {
	Calls       int64   `json:"calls"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	Conns       int     `json:"conns"`
	Concurrency int     `json:"concurrency"`
	Size        int     `json:"size"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	P50         float64 `json:"p50_us"`
	P90         float64 `json:"p90_us"`
	P99         float64 `json:"p99_us"`
	P999        float64 `json:"p999_us"`
	Max         float64 `json:"max_us"`
}

// ready makes CONN connect and waits until it can carry calls.
func ready(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			return fmt.Errorf("connection not ready (%v): %w", s, ctx.Err())
		}
	}
}

// percentile of the sorted latencies LAT, in microseconds.
func percentile(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	i := int(p * float64(len(lat)-1))
	return float64(lat[i]) / 1e3
}

func main() {
	addr := flag.String("addr", "", "the server's HOST:PORT")
	nconns := flag.Int("conns", 1, "keep-alive connections")
	concurrency := flag.Int("concurrency", 1, "calls in flight at all times, over all connections")
	duration := flag.Duration("duration", 6*time.Second, "how long to send calls")
	calls := flag.Int64("calls", 0, "send this many calls, then stop (instead of -duration)")
	size := flag.Int("size", 32, "bytes of payload in each request and each response")
	flag.Parse()
	if *addr == "" || *nconns < 1 || *concurrency < 1 || *size < 0 {
		flag.Usage()
		os.Exit(2)
	}

	conns := make([]*grpc.ClientConn, *nconns)
	for i := range conns {
		c, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			log.Fatalf("grpcload: cannot make a client for '%s': %v", *addr, err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = ready(ctx, c)
		cancel()
		if err != nil {
			log.Fatalf("grpcload: cannot connect to '%s': %v", *addr, err)
		}
		conns[i] = c
	}

	req := &testpb.SimpleRequest{
		ResponseType: testpb.PayloadType_COMPRESSABLE,
		ResponseSize: int32(*size),
		Payload:      &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, *size)},
	}
	var (
		started, failed atomic.Int64
		firstErr        atomic.Value
		wg              sync.WaitGroup
	)
	lats := make([][]time.Duration, *concurrency)
	begin := time.Now()
	deadline := begin.Add(*duration)
	for w := 0; w < *concurrency; w++ {
		client := testpb.NewTestServiceClient(conns[w%len(conns)])
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			lat := make([]time.Duration, 0, 1<<14)
			for {
				if *calls > 0 {
					if started.Add(1) > *calls {
						break
					}
				} else if !time.Now().Before(deadline) {
					break
				}
				t0 := time.Now()
				_, err := client.UnaryCall(ctx, req)
				lat = append(lat, time.Since(t0))
				if err != nil && failed.Add(1) == 1 {
					firstErr.Store(err.Error())
				}
			}
			lats[w] = lat
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(begin)

	all := slices.Concat(lats...)
	slices.Sort(all)
	res := result{
		Calls: int64(len(all)), Errors: failed.Load(), Conns: *nconns,
		Concurrency: *concurrency, Size: *size, Seconds: elapsed.Seconds(),
		RPS: float64(len(all)) / elapsed.Seconds(),
		P50: percentile(all, 0.50), P90: percentile(all, 0.90), P99: percentile(all, 0.99),
		P999: percentile(all, 0.999), Max: percentile(all, 1),
	}
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		log.Fatalf("grpcload: %v", err)
	}
}
