// kafkamix produces and consumes Kafka messages on request, for the tests of gospan's tracing of
// Kafka clients: a small net/http API whose handlers produce through segmentio/kafka-go (tag
// kafkago), IBM/sarama (tag sarama) or twmb/franz-go (tag franz), each in one call of the
// client's API on the handler's own goroutine with the request's context, and a consumer group
// reading topics through one of them, calling a downstream URL for every message it processes.
//
//	kafkamix -addr 127.0.0.1:0 -brokers HOST:PORT [-group G -consume T1,T2 -client franz]
//	                           prints "listening on HOST:PORT"
//
// This file is the HTTP plumbing and the consumer's log; each client lives in a file of its own
// (built with its tag) and registers itself in init() through addClient. The code keeps to the
// Go 1.21 language and standard library.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	brokers    []string
	group      string
	consume    []string      // topics the consumer reads; none: no consumer
	client     string        // the client the consumer uses
	downstream string        // URL the consumer GETs for every message it processes
	batch      bool          // franz-go: process the records of one PollFetches together
	fetch      bool          // kafka-go: FetchMessage and CommitMessages, not ReadMessage
	poll       time.Duration // kafka-go: each read waits at most this long (0: no bound)
	partition  bool          // kafka-go: partition 0 of the first topic, without a group
	records    bool          // franz-go: PollRecords, not PollFetches
	iter       bool          // franz-go: a FetchesRecordIter's Next, not EachRecord
	idempotent bool          // franz-go: keep the idempotent producer
	selectRecv bool          // sarama: ConsumeClaim receives in a select, not a range
	timeout    time.Duration
}

// Bounds on what one request may ask for.
const (
	maxMessages  = 10000
	maxValueSize = 16 << 20
	maxPartition = 1000
)

// header is a Kafka record header.
type header struct {
	name  string
	value []byte
}

// produceRequest is what POST /<client>/produce asks for: values[i] is message i's value.
type produceRequest struct {
	topic string
	key   []byte // nil: no key
	async bool
	// sarama: each message offered to the AsyncProducer in a select with a case that is always
	// ready, which takes about half of them; the others then go through the SyncProducer.
	offer   bool
	headers []header
	values  [][]byte
	// franz-go: "none" sends the batches uncompressed (kgo.NoCompression), "" with the
	// client's default (snappy); the other clients send as they are configured whatever it says.
	compression string
}

// produced is one message as the client reported it: partition and offset are null where the
// client does not say them.
type produced struct {
	Topic     string  `json:"topic"`
	Partition *int32  `json:"partition"`
	Offset    *int64  `json:"offset"`
	Key       *string `json:"key"`
	Value     string  `json:"value"`
	Via       string  `json:"via,omitempty"` // mode=offer: "async" or "sync"
}

// client is one Kafka client library built in.
type client interface {
	// produce sends every message of req in one call of the library's producer API, on the
	// calling goroutine, and reports each as the library returned it.
	produce(ctx context.Context, req *produceRequest) ([]produced, error)
	// createTopic makes a topic of PARTITIONS partitions, one replica, through the library's
	// admin API.
	createTopic(ctx context.Context, name string, partitions int) error
	// consume reads cfg.consume as member of group cfg.group from the earliest offset until ctx
	// ends, handing every message to c on the goroutine that received it.
	consume(ctx context.Context, c *consumer) error
	close()
}

var (
	clients     = map[string]func(cfg *config) client{}
	clientNames []string
)

func addClient(name string, open func(cfg *config) client) {
	clients[name] = open
	clientNames = append(clientNames, name)
}

// statusError is an error answered with a status other than 500.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func badRequest(format string, args ...interface{}) error {
	return &statusError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// handler answers 200 with the JSON of what it returns (a string as text), or the error's text
// with the error's status (500 for any error that is not a *statusError).
type handler func(r *http.Request) (interface{}, error)

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, err := h(r)
	if err != nil {
		code := http.StatusInternalServerError
		var se *statusError
		if errors.As(err, &se) {
			code = se.code
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintln(w, err.Error())
		return
	}
	if s, ok := v.(string); ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, s)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		log.Printf("kafkamix: cannot write the answer to %s: %v", r.URL.Path, err)
	}
}

func post(h handler) handler {
	return func(r *http.Request) (interface{}, error) {
		if r.Method != http.MethodPost {
			return nil, &statusError{http.StatusMethodNotAllowed, r.Method + " " +
				r.URL.Path + ": only POST"}
		}
		return h(r)
	}
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)[:n]
}

// parseProduce reads topic, n, key, mode, header, size and compression from the query.
func parseProduce(q url.Values) (*produceRequest, error) {
	req := &produceRequest{topic: q.Get("topic")}
	if req.topic == "" {
		return nil, badRequest("produce: topic= is missing")
	}
	n, size := 1, 0
	var err error
	if s := q.Get("n"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 || n > maxMessages {
			return nil, badRequest("produce: n=%q is not a number from 1 to %d", s, maxMessages)
		}
	}
	if s := q.Get("size"); s != "" {
		if size, err = strconv.Atoi(s); err != nil || size < 1 || size > maxValueSize {
			return nil, badRequest("produce: size=%q is not a number from 1 to %d", s,
				maxValueSize)
		}
	}
	if keys, ok := q["key"]; ok {
		req.key = []byte(keys[0])
	}
	switch req.compression = q.Get("compression"); req.compression {
	case "", "none":
	default:
		return nil, badRequest("produce: compression=%q is neither empty nor none",
			req.compression)
	}
	switch q.Get("mode") {
	case "", "sync":
	case "async":
		req.async = true
	case "offer":
		req.async, req.offer = true, true
	default:
		return nil, badRequest("produce: mode=%q is not sync, async or offer", q.Get("mode"))
	}
	for _, h := range q["header"] {
		name, value, ok := strings.Cut(h, ":")
		if !ok || name == "" {
			return nil, badRequest("produce: header=%q is not NAME:VALUE", h)
		}
		req.headers = append(req.headers, header{name, []byte(value)})
	}
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("m-%d-%s", i, randomHex(16))
		if size > 0 {
			if size < len(v) {
				return nil, badRequest("produce: size=%d is shorter than the value %q",
					size, v)
			}
			v += randomHex(size - len(v))
		}
		req.values = append(req.values, []byte(v))
	}
	return req, nil
}

// report is what a produce answers for message I when the client says nothing of it but
// that it was written.
func (req *produceRequest) report(i int) produced {
	p := produced{Topic: req.topic, Value: string(req.values[i])}
	if req.key != nil {
		k := string(req.key)
		p.Key = &k
	}
	return p
}

func (p *produced) at(partition int32, offset int64) {
	p.Partition, p.Offset = &partition, &offset
}

func produceHandler(cl client, timeout time.Duration) handler {
	return post(func(r *http.Request) (interface{}, error) {
		req, err := parseProduce(r.URL.Query())
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		got, err := cl.produce(ctx, req)
		if err != nil {
			return nil, err
		}
		return map[string]interface{}{"messages": got}, nil
	})
}

func topicsHandler(cl client, timeout time.Duration) handler {
	return post(func(r *http.Request) (interface{}, error) {
		q := r.URL.Query()
		name := q.Get("name")
		if name == "" {
			return nil, badRequest("topics: name= is missing")
		}
		partitions := 1
		if s := q.Get("partitions"); s != "" {
			var err error
			partitions, err = strconv.Atoi(s)
			if err != nil || partitions < 1 || partitions > maxPartition {
				return nil, badRequest("topics: partitions=%q is not a number from 1 to %d",
					s, maxPartition)
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if err := cl.createTopic(ctx, name, partitions); err != nil {
			return nil, err
		}
		return fmt.Sprintf("created %s (%d partitions)", name, partitions), nil
	})
}

// ---- the consumer ------------------------------------------------------------------------------

// message is a record as a consumer read it.
type message struct {
	topic     string
	partition int32
	offset    int64
	key       []byte
	value     []byte
	headers   []header
}

type consumedHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"` // hex
}

// consumed is one processed message in GET /consumed: key and value in hex (null when the
// record has none), the batch it was processed in (a count from 1), and what the downstream
// GET answered.
type consumed struct {
	Client          string           `json:"client"`
	Topic           string           `json:"topic"`
	Partition       int32            `json:"partition"`
	Offset          int64            `json:"offset"`
	Key             *string          `json:"key"`
	Value           *string          `json:"value"`
	Headers         []consumedHeader `json:"headers"`
	Batch           int              `json:"batch"`
	Downstream      int              `json:"downstream,omitempty"`
	DownstreamError string           `json:"downstream_error,omitempty"`
}

// consumer keeps the log of what was processed, and calls the downstream URL.
type consumer struct {
	cfg  *config
	name string
	http *http.Client

	mu       sync.Mutex
	log      []consumed
	errs     []string
	batches  int
	sessions int // consumer group sessions begun (sarama's Setup)
	timeouts int // reads that ended at their -poll bound without a message
}

// timedOut counts a read that ended at its -poll bound.
func (c *consumer) timedOut() {
	c.mu.Lock()
	c.timeouts++
	c.mu.Unlock()
}

// began counts a consumer group session begun.
func (c *consumer) began() {
	c.mu.Lock()
	c.sessions++
	c.mu.Unlock()
}

func hexOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}

// process records MS, the messages of one batch, then makes one downstream GET for them, on
// the calling goroutine: the one that received them.
func (c *consumer) process(ctx context.Context, ms ...message) {
	if len(ms) == 0 {
		return
	}
	c.mu.Lock()
	c.batches++
	batch := c.batches
	c.mu.Unlock()
	status, why := c.callDownstream(ctx, ms)
	entries := make([]consumed, 0, len(ms))
	for _, m := range ms {
		e := consumed{Client: c.name, Topic: m.topic, Partition: m.partition, Offset: m.offset,
			Key: hexOrNil(m.key), Value: hexOrNil(m.value), Headers: []consumedHeader{},
			Batch: batch, Downstream: status, DownstreamError: why}
		for _, h := range m.headers {
			e.Headers = append(e.Headers, consumedHeader{h.name, hex.EncodeToString(h.value)})
		}
		entries = append(entries, e)
	}
	c.mu.Lock()
	c.log = append(c.log, entries...)
	c.mu.Unlock()
}

func (c *consumer) callDownstream(ctx context.Context, ms []message) (int, string) {
	if c.cfg.downstream == "" {
		return 0, ""
	}
	u, err := url.Parse(c.cfg.downstream)
	if err != nil {
		return 0, err.Error()
	}
	q := u.Query()
	q.Set("topic", ms[0].topic)
	q.Set("partition", strconv.Itoa(int(ms[0].partition)))
	q.Set("offset", strconv.FormatInt(ms[0].offset, 10))
	if len(ms) > 1 {
		q.Set("count", strconv.Itoa(len(ms)))
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode, ""
}

// fail records an error the consumer met (it goes on).
func (c *consumer) fail(err error) {
	log.Printf("kafkamix: %s consumer: %v", c.name, err)
	c.mu.Lock()
	c.errs = append(c.errs, err.Error())
	c.mu.Unlock()
}

func (c *consumer) snapshot() map[string]interface{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return map[string]interface{}{
		"messages": append([]consumed{}, c.log...),
		"errors":   append([]string{}, c.errs...),
		"sessions": c.sessions,
		"timeouts": c.timeouts,
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func main() {
	var cfg config
	addr := flag.String("addr", "127.0.0.1:0", "HTTP listen address")
	brokers := flag.String("brokers", "127.0.0.1:9092", "Kafka bootstrap brokers, HOST:PORT,...")
	consume := flag.String("consume", "", "topics to consume, T1,T2,... (none: no consumer)")
	flag.StringVar(&cfg.group, "group", "kafkamix", "the consumer group")
	flag.StringVar(&cfg.client, "client", "", "the client that consumes: kafkago, sarama, franz")
	flag.StringVar(&cfg.downstream, "downstream", "",
		"URL the consumer GETs (with ?topic=&partition=&offset=) for every message it processes")
	flag.BoolVar(&cfg.batch, "batch", false,
		"franz: process the records of one poll together (one downstream GET)")
	flag.BoolVar(&cfg.fetch, "fetch", false,
		"kafkago: FetchMessage and CommitMessages instead of ReadMessage")
	flag.DurationVar(&cfg.poll, "poll", 0,
		"kafkago: each read waits at most this long, then the next begins (0: no bound)")
	flag.BoolVar(&cfg.partition, "partition", false,
		"kafkago: read partition 0 of the first -consume topic, without a group (no commits)")
	flag.BoolVar(&cfg.records, "records", false, "franz: PollRecords instead of PollFetches")
	flag.BoolVar(&cfg.iter, "iter", false,
		"franz: the poll's RecordIter, Done and Next, instead of EachRecord")
	flag.BoolVar(&cfg.idempotent, "idempotent", false,
		"franz: keep the idempotent producer (a produce then waits for a broker that went away)")
	flag.BoolVar(&cfg.selectRecv, "select", false,
		"sarama: ConsumeClaim receives each message in a select, not a range")
	flag.DurationVar(&cfg.timeout, "timeout", 15*time.Second,
		"bound on one produce or topic request (the clients' own bounds are shorter)")
	flag.Parse()
	log.SetFlags(0)
	cfg.brokers = splitList(*brokers)
	cfg.consume = splitList(*consume)
	sort.Strings(clientNames)

	mux := http.NewServeMux()
	mux.Handle("/health", handler(func(*http.Request) (interface{}, error) { return "ok", nil }))
	opened := map[string]client{}
	for _, name := range clientNames {
		cl := clients[name](&cfg)
		opened[name] = cl
		mux.Handle("/"+name+"/produce", produceHandler(cl, cfg.timeout))
		mux.Handle("/"+name+"/topics", topicsHandler(cl, cfg.timeout))
	}
	defer func() {
		for _, cl := range opened {
			cl.close()
		}
	}()

	var cons *consumer
	if len(cfg.consume) > 0 {
		if opened[cfg.client] == nil {
			log.Fatalf("kafkamix: -consume needs -client, one of the clients built in (%s), "+
				"not %q", strings.Join(clientNames, ", "), cfg.client)
		}
		cons = &consumer{cfg: &cfg, name: cfg.client, http: &http.Client{Timeout: 10 * time.Second}}
	}
	mux.Handle("/consumed", handler(func(*http.Request) (interface{}, error) {
		if cons == nil {
			return nil, badRequest("consumed: no consumer runs (no -consume)")
		}
		return cons.snapshot(), nil
	}))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("kafkamix: cannot listen on '%s': %v", *addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	consumerCtx, stopConsumer := context.WithCancel(context.Background())
	consumerDone := make(chan struct{})
	if cons != nil {
		go func() {
			defer close(consumerDone)
			if err := opened[cfg.client].consume(consumerCtx, cons); err != nil {
				cons.fail(err)
			}
		}()
	} else {
		close(consumerDone)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// Printed after Listen, so whoever waits for this line can connect at once.
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err = <-done:
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(shutdownCtx)
		cancel()
	}
	if err != nil && err != http.ErrServerClosed {
		log.Printf("kafkamix: %v", err)
	}
	stopConsumer()
	select {
	case <-consumerDone:
	case <-time.After(10 * time.Second):
		log.Printf("kafkamix: the %s consumer did not stop within 10 s", cfg.client)
	}
}
