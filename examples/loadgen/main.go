// loadgen sends GET requests to a list of URLs in turn, one at a time and at a steady pace, and
// says how each one went. It is the traffic of gospan's demo (examples/demo.sh), which points it
// at the frontend; it is not traced itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// maxBody bounds what is read of an answer: the body is drained only so the connection is reused.
const maxBody = 1 << 20

// urlList is the -url flag: repeatable, and each value may be a comma-separated list.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, ",") }

func (l *urlList) Set(v string) error {
	for _, u := range strings.Split(v, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("'%s' is not an http:// or https:// URL", u)
		}
		*l = append(*l, u)
	}
	return nil
}

// stats counts answers by class and keeps the durations of the requests that got one.
type stats struct {
	n, ok, client, server, other, failed int
	total, min, max                      time.Duration
}

func (s *stats) add(status int, err error, d time.Duration) {
	s.n++
	switch {
	case err != nil:
		s.failed++
		return
	case status >= 200 && status < 300:
		s.ok++
	case status >= 400 && status < 500:
		s.client++
	case status >= 500:
		s.server++
	default:
		s.other++
	}
	answered := s.n - s.failed
	if answered == 1 || d < s.min {
		s.min = d
	}
	if d > s.max {
		s.max = d
	}
	s.total += d
}

func (s stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests: %d 2xx, %d 4xx, %d 5xx", s.n, s.ok, s.client, s.server)
	if s.other > 0 {
		fmt.Fprintf(&b, ", %d other", s.other)
	}
	fmt.Fprintf(&b, ", %d without answer", s.failed)
	if answered := s.n - s.failed; answered > 0 {
		fmt.Fprintf(&b, "; duration min %s, mean %s, max %s", ms(s.min),
			ms(s.total/time.Duration(answered)), ms(s.max))
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", d.Seconds()*1e3) }

// get sends one GET and reads the answer; the duration runs until the body has been read.
func get(ctx context.Context, client *http.Client, u string) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), err
}

func usage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
	flag.Usage()
	os.Exit(2)
}

func main() {
	var urls urlList
	flag.Var(&urls, "url", "URL to send GET requests to; repeat the flag or separate URLs with commas")
	interval := flag.Duration("interval", 200*time.Millisecond,
		"time from the start of one request to the start of the next")
	count := flag.Int("count", 0, "requests to send before exiting; 0 sends until SIGTERM or Ctrl-C")
	timeout := flag.Duration("timeout", 5*time.Second, "time limit of each request")
	every := flag.Int("summary", 0,
		"print a summary line every N requests instead of one line per request (0: one per request)")
	flag.Parse()

	switch {
	case flag.NArg() > 0:
		usage("unexpected argument '%s'", flag.Arg(0))
	case len(urls) == 0:
		usage("no URL given: use -url URL")
	case *interval < 0:
		usage("-interval must not be negative")
	case *count < 0:
		usage("-count must not be negative")
	case *timeout <= 0:
		usage("-timeout must be positive")
	case *every < 0:
		usage("-summary must not be negative")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &http.Client{
		Timeout: *timeout,
		// No proxy, whatever the environment says: the demo's services are on loopback.
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		// A redirect is an answer like any other; following it would hide its status.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	var all, window stats
	timer := time.NewTimer(0)
	<-timer.C
	next := time.Now()
	for i := 0; *count == 0 || i < *count; i++ {
		if i > 0 {
			// A request slower than the interval delays the next one; no burst to catch up.
			next = next.Add(*interval)
			if now := time.Now(); next.Before(now) {
				next = now
			}
			timer.Reset(time.Until(next))
			select {
			case <-ctx.Done():
				timer.Stop()
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		u := urls[i%len(urls)]
		// A request under way when the signal comes is finished (within -timeout) and
		// counted: the service may already have served it, and the summary must say so.
		status, d, err := get(context.WithoutCancel(ctx), client, u)
		all.add(status, err, d)
		window.add(status, err, d)
		switch {
		case *every > 0 && window.n == *every:
			fmt.Printf("loadgen: last %s\n", window)
			window = stats{}
		case *every > 0:
		case err != nil:
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			fmt.Printf("%5d  ---  %10s  %s: %v\n", all.n, ms(d), u, err)
		default:
			fmt.Printf("%5d  %3d  %10s  %s\n", all.n, status, ms(d), u)
		}
	}
	fmt.Printf("loadgen: %s\n", all)
	if all.n > 0 && all.failed == all.n {
		fmt.Fprintln(os.Stderr, "loadgen: no request got an answer")
		os.Exit(1)
	}
}
