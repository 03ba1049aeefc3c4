//go:build kafkago

// The /kafkago/ routes and consumer: github.com/segmentio/kafka-go. Produce is one
// (*kafka.Writer).WriteMessages call, the consumer a group Reader's ReadMessage (FetchMessage and
// CommitMessages with -fetch).

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

func init() { addClient("kafkago", openKafkaGo) }

type kgResult struct {
	index     int // of the message in its request
	partition int32
	offset    int64
	err       error
}

type kgWaiter struct {
	index   int
	results chan<- kgResult
}

// kafkaGo holds one synchronous and one asynchronous Writer. Both report every batch written
// to Completion (with its partition and offsets), which hands each message's result to the
// request that produced it: messages are told apart by topic and value, random per message.
type kafkaGo struct {
	cfg       *config
	transport *kafka.Transport
	sync      *kafka.Writer
	async     *kafka.Writer

	mu      sync.Mutex
	waiting map[string]kgWaiter
}

func openKafkaGo(cfg *config) client {
	k := &kafkaGo{
		cfg: cfg,
		// Dials give up after 2 s and topic metadata is kept 1 s, so a broker that went away
		// or a topic made a moment ago is seen soon.
		transport: &kafka.Transport{DialTimeout: 2 * time.Second, MetadataTTL: time.Second},
		waiting:   map[string]kgWaiter{},
	}
	k.sync = k.writer(false)
	k.async = k.writer(true)
	return k
}

func (k *kafkaGo) writer(async bool) *kafka.Writer {
	return &kafka.Writer{
		Addr:      kafka.TCP(k.cfg.brokers...),
		Balancer:  &kafka.Murmur2Balancer{},
		Transport: k.transport,
		// The default waits up to 1 s for a batch to fill; a sync call would wait that long.
		BatchTimeout: 5 * time.Millisecond,
		BatchBytes:   maxValueSize + 1<<20,
		RequiredAcks: kafka.RequireAll,
		// 3 attempts 100 to 500 ms apart, each bounded by 5 s: a broker that is away fails a
		// write within seconds, not after the default 10 attempts of up to 10 s.
		MaxAttempts:     3,
		WriteBackoffMin: 100 * time.Millisecond,
		WriteBackoffMax: 500 * time.Millisecond,
		ReadTimeout:     5 * time.Second,
		WriteTimeout:    5 * time.Second,
		Async:           async,
		Completion:      k.completed,
	}
}

func waitKey(topic string, value []byte) string { return topic + "\x00" + string(value) }

func (k *kafkaGo) completed(msgs []kafka.Message, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range msgs {
		key := waitKey(m.Topic, m.Value)
		if w, ok := k.waiting[key]; ok {
			delete(k.waiting, key)
			w.results <- kgResult{w.index, int32(m.Partition), m.Offset, err}
		}
	}
}

func (k *kafkaGo) forget(req *produceRequest) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, v := range req.values {
		delete(k.waiting, waitKey(req.topic, v))
	}
}

func (k *kafkaGo) produce(ctx context.Context, req *produceRequest) ([]produced, error) {
	msgs := make([]kafka.Message, len(req.values))
	results := make(chan kgResult, len(req.values))
	k.mu.Lock()
	for i, v := range req.values {
		msgs[i] = kafka.Message{Topic: req.topic, Key: req.key, Value: v}
		for _, h := range req.headers {
			msgs[i].Headers = append(msgs[i].Headers, kafka.Header{Key: h.name, Value: h.value})
		}
		k.waiting[waitKey(req.topic, v)] = kgWaiter{i, results}
	}
	k.mu.Unlock()
	defer k.forget(req)

	w := k.sync
	if req.async {
		w = k.async
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return nil, err
	}
	// Sync: Completion was called before WriteMessages returned. Async: it comes later.
	out := make([]produced, len(req.values))
	for i := range out {
		out[i] = req.report(i)
	}
	for n := 0; n < len(req.values); n++ {
		select {
		case r := <-results:
			if r.err != nil {
				return nil, r.err
			}
			out[r.index].at(r.partition, r.offset)
		case <-ctx.Done():
			return nil, fmt.Errorf("kafka-go: %d of %d messages not reported written: %w",
				len(req.values)-n, len(req.values), ctx.Err())
		}
	}
	return out, nil
}

func (k *kafkaGo) createTopic(ctx context.Context, name string, partitions int) error {
	c := &kafka.Client{Addr: kafka.TCP(k.cfg.brokers...), Transport: k.transport,
		Timeout: 10 * time.Second}
	resp, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: name, NumPartitions: partitions, ReplicationFactor: 1}}})
	if err != nil {
		return err
	}
	return resp.Errors[name]
}

func (k *kafkaGo) consume(ctx context.Context, c *consumer) error {
	rc := kafka.ReaderConfig{
		Brokers:     k.cfg.brokers,
		GroupID:     k.cfg.group,
		GroupTopics: k.cfg.consume,
		StartOffset: kafka.FirstOffset,
		Dialer:      &kafka.Dialer{Timeout: 2 * time.Second},
		// A fetch waits at most 500 ms for data (the default 10 s makes shutdown slow), and a
		// failed join is tried again after 500 ms, not 5 s.
		MaxWait:           500 * time.Millisecond,
		MaxBytes:          maxValueSize + 1<<20,
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  500 * time.Millisecond,
		ReadBackoffMin:    100 * time.Millisecond,
		ReadBackoffMax:    500 * time.Millisecond,
	}
	if k.cfg.partition {
		// A reader without a group reads one partition: ReadMessage commits nothing.
		rc.GroupID, rc.GroupTopics, rc.Topic = "", nil, k.cfg.consume[0]
	}
	r := kafka.NewReader(rc)
	defer r.Close()
	for {
		var m kafka.Message
		var err error
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if k.cfg.poll > 0 {
			rctx, cancel = context.WithTimeout(ctx, k.cfg.poll)
		}
		if k.cfg.fetch {
			m, err = r.FetchMessage(rctx)
		} else {
			m, err = r.ReadMessage(rctx)
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				c.timedOut()
				continue
			}
			c.fail(err)
			continue
		}
		msg := message{topic: m.Topic, partition: int32(m.Partition), offset: m.Offset,
			key: m.Key, value: m.Value}
		for _, h := range m.Headers {
			msg.headers = append(msg.headers, header{h.Key, h.Value})
		}
		c.process(ctx, msg)
		if k.cfg.fetch {
			if err := r.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
				c.fail(err)
			}
		}
	}
}

func (k *kafkaGo) close() {
	k.sync.Close()
	k.async.Close()
}
