// kafkaload is the traced process of make bench's kafka part (bench/run): one Kafka client per
// process producing messages one call each, then consuming them, against a broker given by
// flags. It serves nothing: a binary with Kafka clients and no server, of which gospan traces
// only the Kafka calls.
//
//	kafkaload -client kafkago|franz|sarama -brokers HOST:PORT -topic T [-size 128]
//
// The topic is expected to exist with one partition (bench/run makes it). The clients:
//
//	kafkago  segmentio/kafka-go: (*kafka.Writer).WriteMessages of one message (BatchSize 1, so
//	         the batch goes out at once, acks from every replica), and a partition
//	         *kafka.Reader's ReadMessage, one message a call
//	franz    twmb/franz-go: (*kgo.Client).ProduceSync of one record, uncompressed
//	         (kgo.ProducerBatchCompression(kgo.NoCompression())) and without lingering, and a
//	         client consuming the partition: PollFetches, then Fetches.EachRecord
//	sarama   IBM/sarama: SyncProducer.SendMessage of one message, an AsyncProducer's Input()
//	         (async runs), and a ConsumerGroup of the process's own group whose handler's
//	         ConsumeClaim ranges over claim.Messages(), marking each message
//	         (sess.MarkMessage) and returning after the run's last
//
// At start it makes its producer (franz-go pings the broker, sarama connects as it makes it) and
// says "kafkaload: ready" on stderr. Then it reads runs from stdin, one a line, until stdin ends:
//
//	produce -duration 3s | produce -messages N
//	                       one call after another, each sending one message
//	async -duration 3s | async -messages N [-inflight 1]
//	                       sarama: messages sent on an AsyncProducer's Input() channel, made
//	                       for the run (after a tracer attached, so the tracer knows it at
//	                       once) and closed at its end, their results taken from Successes()
//	                       (and Errors()); -inflight 1 sends one (a plain channel send) and
//	                       awaits its result before the next, more keeps that many awaiting
//	                       theirs (one select sends or takes a result)
//	consume -messages N    the next N messages of the partition (from where the last run left
//	                       off), through a consumer made for the run and closed at its end
//
// A consumer lives for one run so that nothing fetches in the background while messages are
// produced: each run's CPU is its own operation's. (It also makes each sarama claim begin after a
// tracer attached to a kafkaload already running, so the tracer sees the claim's start.) Each run
// prints one JSON line on stdout: messages, errors (and the first), for consume the messages the
// library handed over (more than asked for where a poll brought more: franz-go's EachRecord hands
// over every record of a poll), seconds, messages per second, the process's own CPU over the run
// (getrusage: user and system time, which holds the uprobe traps and the BPF programs of a
// tracer, as they run in the calling thread), and for produce the percentiles of a call's latency
// in microseconds.
//
// A sarama consumption's seconds and CPU are those of its claim: from the handler's Setup (the
// group joined, the partition assigned) to ConsumeClaim's return after the run's last message.
// Making the group, joining it, and after the claim committing the offsets, leaving the group and
// closing it are once a run, however many messages it has; their time and CPU are given apart
// (group_seconds, group_cpu_us). So are an async run's making and closing of its producer
// (producer_seconds, producer_cpu_us): its seconds and CPU are from its first send to its last
// result, and its latency percentiles a message's, from its making to its result.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds on a call, so that a broker gone away fails a run instead of hanging it.
const (
	callTimeout    = 10 * time.Second
	consumeTimeout = 60 * time.Second
	fetchWait      = 100 * time.Millisecond
)

// client is one Kafka client library: its producer, made at start, and a consumer per run.
type client interface {
	// produce sends one message in one call of the library's producer API.
	produce(ctx context.Context, key, value []byte) error
	// consume reads N messages of the partition from OFFSET and hands each to check, one at
	// a time; it returns how many the library handed over (more than N where a poll brought
	// more, each one a message a tracer sees processed). A client whose consumer has a
	// setup of its own, not per message (sarama's group join), marks the part of the run
	// that is the messages' with claim.
	consume(ctx context.Context, offset int64, n int, claim *window,
		check func(offset int64, value []byte) error) (int, error)
	close()
}

type result struct {
	Client     string  `json:"client"`
	Op         string  `json:"op"`
	Messages   int64   `json:"messages"`
	Handed     int64   `json:"handed_over,omitempty"` // consume: messages the library handed over
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	Rate       float64 `json:"rate"`
	CPUus      float64 `json:"cpu_us"`
	P50        float64 `json:"p50_us,omitempty"`
	P90        float64 `json:"p90_us,omitempty"`
	P99        float64 `json:"p99_us,omitempty"`
	// consume, sarama: the run outside its claim (making, joining, leaving the group)
	GroupSeconds float64 `json:"group_seconds,omitempty"`
	GroupCPUus   float64 `json:"group_cpu_us,omitempty"`
	// async: messages awaiting their result at most, and the run outside its sends (making
	// and closing the AsyncProducer)
	InFlight        int     `json:"in_flight,omitempty"`
	ProducerSeconds float64 `json:"producer_seconds,omitempty"`
	ProducerCPUus   float64 `json:"producer_cpu_us,omitempty"`
}

// ---- segmentio/kafka-go ----------------------------------------------------------------------

type kafkaGo struct {
	brokers []string
	topic   string
	w       *kafka.Writer
}

func newKafkaGo(brokers []string, topic string) (client, error) {
	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Topic:        topic,
		BatchSize:    1, // a sync call of one message is a full batch: sent at once
		BatchTimeout: time.Millisecond,
		RequiredAcks: kafka.RequireAll,
		ReadTimeout:  callTimeout,
		WriteTimeout: callTimeout,
	}
	return &kafkaGo{brokers: brokers, topic: topic, w: w}, nil
}

func (c *kafkaGo) produce(ctx context.Context, key, value []byte) error {
	return c.w.WriteMessages(ctx, kafka.Message{Key: key, Value: value})
}

func (c *kafkaGo) consume(ctx context.Context, offset int64, n int, _ *window,
	check func(int64, []byte) error) (int, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:  c.brokers,
		Topic:    c.topic,
		MinBytes: 1,
		MaxBytes: 16 << 20,
		MaxWait:  fetchWait,
	})
	// Close ends the span of the last message handed over.
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return i, err
		}
		if err := check(m.Offset, m.Value); err != nil {
			return i + 1, err
		}
	}
	return n, nil
}

func (c *kafkaGo) close() { c.w.Close() }

// ---- twmb/franz-go ---------------------------------------------------------------------------

type franz struct {
	brokers []string
	topic   string
	cl      *kgo.Client
}

func newFranz(brokers []string, topic string) (client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0),
		kgo.RequestRetries(2), kgo.RecordDeliveryTimeout(callTimeout))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return &franz{brokers: brokers, topic: topic, cl: cl}, nil
}

func (c *franz) produce(ctx context.Context, key, value []byte) error {
	return c.cl.ProduceSync(ctx, &kgo.Record{Topic: c.topic, Key: key, Value: value}).FirstErr()
}

func (c *franz) consume(ctx context.Context, offset int64, n int, _ *window,
	check func(int64, []byte) error) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.FetchMaxWait(fetchWait),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			c.topic: {0: kgo.NewOffset().At(offset)},
		}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	got, handed := 0, 0
	for got < n {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return handed, err
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("%s/%d: %w", t, p, err))
		})
		fetches.EachRecord(func(r *kgo.Record) {
			handed++
			// Records past the run's last are left for the next run's consumer.
			if got < n && ferr == nil {
				ferr = check(r.Offset, r.Value)
				got++
			}
		})
		if ferr != nil {
			return handed, ferr
		}
	}
	return handed, nil
}

func (c *franz) close() { c.cl.Close() }

// ---- IBM/sarama ------------------------------------------------------------------------------

type saramaClient struct {
	brokers []string
	topic   string
	cfg     *sarama.Config
	p       sarama.SyncProducer
}

func newSarama(brokers []string, topic string) (client, error) {
	cfg := sarama.NewConfig()
	cfg.ClientID = "kafkaload"
	cfg.Net.DialTimeout = callTimeout
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Timeout = callTimeout
	// The group's first run starts at the partition's first message; each run commits what it
	// marked as the group leaves, where the next run's claim starts.
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.MaxWaitTime = fetchWait
	cfg.Consumer.Return.Errors = true
	p, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		return nil, err
	}
	return &saramaClient{brokers: brokers, topic: topic, cfg: cfg, p: p}, nil
}

func (c *saramaClient) produce(_ context.Context, key, value []byte) error {
	_, _, err := c.p.SendMessage(&sarama.ProducerMessage{
		Topic: c.topic, Key: sarama.ByteEncoder(key), Value: sarama.ByteEncoder(value)})
	return err
}

// saramaHandler is a consumer group's handler taking N messages of one claim.
type saramaHandler struct {
	n        int
	claim    *window
	check    func(int64, []byte) error
	handed   int
	sessions int
	err      error
}

// Setup begins the claim's window at the group's first session: a session after a rebalance
// (rare: one member, a session timeout of 10 s) leaves its join in the window, and says so.
func (h *saramaHandler) Setup(sess sarama.ConsumerGroupSession) error {
	if h.sessions++; h.sessions == 1 {
		h.claim.begin()
	} else {
		log.Printf("kafkaload: the group rebalanced during a run (generation %d): its join "+
			"is counted in the run's claim", sess.GenerationID())
	}
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim returns after the run's last message, which ends the session; the messages
// fetched past it are left unreceived, for the next run.
func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession,
	claim sarama.ConsumerGroupClaim) error {
	defer h.claim.end()
	for m := range claim.Messages() {
		h.handed++
		if h.err = h.check(m.Offset, m.Value); h.err != nil {
			return h.err
		}
		sess.MarkMessage(m, "")
		if h.handed == h.n {
			return nil
		}
	}
	return nil
}

func (c *saramaClient) consume(ctx context.Context, _ int64, n int, claim *window,
	check func(int64, []byte) error) (int, error) {
	// The group is the process's own (its topic's), so its committed offset is where the last
	// run left off.
	g, err := sarama.NewConsumerGroup(c.brokers, "kafkaload-"+c.topic, c.cfg)
	if err != nil {
		return 0, err
	}
	var gerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for err := range g.Errors() {
			gerr = errors.Join(gerr, err)
		}
	}()
	h := &saramaHandler{n: n, claim: claim, check: check}
	// Consume returns as the session ends: after the handler's last message, or at a rebalance
	// (then the group is joined again, a new claim taking over from the offset committed).
	for h.handed < n && h.err == nil && ctx.Err() == nil {
		if err = g.Consume(ctx, []string{c.topic}, h); err != nil {
			break
		}
	}
	// Close leaves the group, so the next run's join has no member to wait for.
	if cerr := g.Close(); cerr != nil && err == nil {
		err = cerr
	}
	<-done
	switch {
	case h.err != nil:
		return h.handed, h.err
	case err != nil || gerr != nil:
		return h.handed, errors.Join(err, gerr)
	case h.handed < n:
		return h.handed, fmt.Errorf("%d of %d messages: %w", h.handed, n, ctx.Err())
	}
	return h.handed, nil
}

func (c *saramaClient) close() { c.p.Close() }

// async sends on an AsyncProducer made for the run, INFLIGHT messages at most awaiting their
// result (Successes or Errors), until UNTIL says stop; it hands each result to DONE. With one
// in flight a send is a plain channel send and the result awaited by a select of the two
// channels; with more, one select sends or takes a result, whichever is ready. The producer
// is made and closed outside the window SENDS.
func (c *saramaClient) async(inflight int, sends *window, until func(sent int) bool,
	compose func() (key, value []byte), done func(sent time.Time, err error)) error {
	p, err := sarama.NewAsyncProducer(c.brokers, c.cfg)
	if err != nil {
		return err
	}
	message := func() *sarama.ProducerMessage {
		key, value := compose()
		return &sarama.ProducerMessage{Topic: c.topic, Key: sarama.ByteEncoder(key),
			Value: sarama.ByteEncoder(value), Metadata: time.Now()}
	}
	result := func(m *sarama.ProducerMessage, err error) { done(m.Metadata.(time.Time), err) }
	// A message once made is sent, whatever UNTIL says meanwhile: its number is taken, and a
	// message offered to a select and never sent would leave a tracer's span begun.
	var next *sarama.ProducerMessage
	sends.begin()
	for sent, pending := 0, 0; ; {
		if next == nil && pending < inflight && !until(sent) {
			next = message()
		}
		if next == nil && pending == 0 {
			break
		}
		if inflight == 1 && next != nil {
			p.Input() <- next
			next = nil
			sent++
			select {
			case m := <-p.Successes():
				result(m, nil)
			case e := <-p.Errors():
				result(e.Msg, e.Err)
			}
			continue
		}
		// A nil channel's case is never chosen: no send while none is made.
		var input chan<- *sarama.ProducerMessage
		if next != nil {
			input = p.Input()
		}
		select {
		case input <- next:
			next = nil
			sent++
			pending++
		case m := <-p.Successes():
			result(m, nil)
			pending--
		case e := <-p.Errors():
			result(e.Msg, e.Err)
			pending--
		}
	}
	sends.end()
	return p.Close()
}

// ---- runs ------------------------------------------------------------------------------------

// window is a part of a run: its wall time and the process's CPU at its ends.
type window struct {
	t0, t1     time.Time
	cpu0, cpu1 float64
}

func (w *window) begin()           { w.t0, w.cpu0 = time.Now(), cpuMicros() }
func (w *window) end()             { w.t1, w.cpu1 = time.Now(), cpuMicros() }
func (w *window) seconds() float64 { return w.t1.Sub(w.t0).Seconds() }
func (w *window) cpu() float64     { return w.cpu1 - w.cpu0 }
func (w *window) whole() bool      { return !w.t0.IsZero() && !w.t1.IsZero() }

func cpuMicros() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatalf("kafkaload: getrusage: %v", err)
	}
	us := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e6 + float64(t.Usec) }
	return us(ru.Utime) + us(ru.Stime)
}

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return float64(sorted[i].Nanoseconds()) / 1e3
}

type loader struct {
	name     string
	c        client
	size     int
	sent     int64 // messages produced so far: the next one's sequence number
	consumed int64 // the partition's next offset to consume
}

// value is message SEQ's value: its number, then padding up to SIZE bytes.
func (l *loader) value(seq int64) []byte {
	v := []byte(fmt.Sprintf("kafkaload-%d-", seq))
	for len(v) < l.size {
		v = append(v, 'x')
	}
	return v
}

func (l *loader) produce(duration time.Duration, messages int64) result {
	res := result{Client: l.name, Op: "produce"}
	var lat []time.Duration
	cpu0, t0 := cpuMicros(), time.Now()
	for i := int64(0); ; i++ {
		if messages > 0 && i >= messages || messages == 0 && time.Since(t0) >= duration {
			break
		}
		seq := l.sent
		key := []byte("key-" + strconv.FormatInt(seq%16, 10))
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		c0 := time.Now()
		err := l.c.produce(ctx, key, l.value(seq))
		lat = append(lat, time.Since(c0))
		cancel()
		l.sent++
		if err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = err.Error()
			}
			continue
		}
		res.Messages++
	}
	res.Seconds = time.Since(t0).Seconds()
	res.CPUus = cpuMicros() - cpu0
	slices.Sort(lat)
	res.P50, res.P90, res.P99 = percentile(lat, 0.5), percentile(lat, 0.9), percentile(lat, 0.99)
	res.Rate = float64(res.Messages) / res.Seconds
	return res
}

// async is a run of sarama's AsyncProducer: a producer made for the run, INFLIGHT messages at
// most awaiting their result. Its seconds and CPU are its sends' (from the first send to the
// last result); making the producer and closing it are given apart.
func (l *loader) async(duration time.Duration, messages int64, inflight int) result {
	res := result{Client: l.name, Op: "async", InFlight: inflight}
	var lat []time.Duration
	fail := func(err error) {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	c, ok := l.c.(*saramaClient)
	if !ok {
		fail(fmt.Errorf("-client %s has no AsyncProducer", l.name))
		return res
	}
	var run, sends window
	run.begin()
	err := c.async(inflight, &sends, func(sent int) bool {
		if messages > 0 {
			return int64(sent) >= messages
		}
		return !sends.t0.IsZero() && time.Since(sends.t0) >= duration
	}, func() ([]byte, []byte) {
		seq := l.sent
		l.sent++
		return []byte("key-" + strconv.FormatInt(seq%16, 10)), l.value(seq)
	}, func(sent time.Time, err error) {
		lat = append(lat, time.Since(sent))
		if err != nil {
			fail(err)
			return
		}
		res.Messages++
	})
	run.end()
	if err != nil {
		fail(err)
	}
	if sends.whole() {
		res.Seconds, res.CPUus = sends.seconds(), sends.cpu()
		res.ProducerSeconds = run.seconds() - sends.seconds()
		res.ProducerCPUus = run.cpu() - sends.cpu()
		res.Rate = float64(res.Messages) / res.Seconds
	}
	slices.Sort(lat)
	res.P50, res.P90, res.P99 = percentile(lat, 0.5), percentile(lat, 0.9), percentile(lat, 0.99)
	return res
}

func (l *loader) consume(messages int64) result {
	res := result{Client: l.name, Op: "consume"}
	ctx, cancel := context.WithTimeout(context.Background(), consumeTimeout)
	defer cancel()
	want := l.consumed
	var run, claim window
	run.begin()
	handed, err := l.c.consume(ctx, l.consumed, int(messages), &claim, func(offset int64,
		value []byte) error {
		if offset != want {
			return fmt.Errorf("offset %d where %d was next", offset, want)
		}
		if prefix := fmt.Sprintf("kafkaload-%d-", offset); !strings.HasPrefix(string(value),
			prefix) {
			return fmt.Errorf("offset %d holds %.40q, not a value of kafkaload's", offset, value)
		}
		want++
		res.Messages++
		return nil
	})
	run.end()
	res.Seconds, res.CPUus = run.seconds(), run.cpu()
	if claim.whole() {
		res.Seconds, res.CPUus = claim.seconds(), claim.cpu()
		res.GroupSeconds, res.GroupCPUus = run.seconds()-claim.seconds(), run.cpu()-claim.cpu()
	}
	l.consumed = want
	res.Handed = int64(handed)
	if err != nil {
		res.Errors = 1
		res.FirstError = err.Error()
	}
	res.Rate = float64(res.Messages) / res.Seconds
	return res
}

// run does one line of stdin: "produce -duration D", "produce -messages N", "async -duration D
// [-inflight N]", "async -messages N [-inflight N]" or "consume -messages N".
func (l *loader) run(line string) (result, error) {
	args := strings.Fields(line)
	if len(args) == 0 {
		return result{}, errors.New("empty line")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	duration := fs.Duration("duration", 0, "produce for this long")
	messages := fs.Int64("messages", 0, "messages to produce or consume")
	inflight := fs.Int("inflight", 1, "async: messages awaiting their result at most")
	if err := fs.Parse(args[1:]); err != nil {
		return result{}, err
	}
	switch {
	case args[0] == "produce" && (*duration > 0) != (*messages > 0):
		return l.produce(*duration, *messages), nil
	case args[0] == "async" && (*duration > 0) != (*messages > 0) && *inflight > 0:
		return l.async(*duration, *messages, *inflight), nil
	case args[0] == "consume" && *messages > 0 && *duration == 0:
		return l.consume(*messages), nil
	}
	return result{}, fmt.Errorf("not a run: %q", line)
}

func main() {
	name := flag.String("client", "", "kafkago, franz or sarama")
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap brokers, HOST:PORT,...")
	topic := flag.String("topic", "", "the topic (one partition, made beforehand)")
	size := flag.Int("size", 128, "bytes of each message's value")
	flag.Parse()
	if *topic == "" {
		log.Fatal("kafkaload: -topic is missing")
	}
	open := map[string]func([]string, string) (client, error){
		"kafkago": newKafkaGo, "franz": newFranz, "sarama": newSarama}[*name]
	if open == nil {
		log.Fatalf("kafkaload: -client %q is none of kafkago, franz, sarama", *name)
	}
	c, err := open(strings.Split(*brokers, ","), *topic)
	if err != nil {
		log.Fatalf("kafkaload: cannot make the %s producer for %s: %v", *name, *brokers, err)
	}
	defer c.close()
	l := &loader{name: *name, c: c, size: *size}
	fmt.Fprintln(os.Stderr, "kafkaload: ready")
	enc := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		res, err := l.run(sc.Text())
		if err != nil {
			log.Fatalf("kafkaload: %v", err)
		}
		if err := enc.Encode(res); err != nil {
			log.Fatalf("kafkaload: cannot write a result: %v", err)
		}
	}
}
