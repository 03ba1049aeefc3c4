//go:build franz

// The /franz/ routes and consumer: github.com/twmb/franz-go. Produce is one (*kgo.Client)
// ProduceSync call with every record, or, async, one Produce per record with a promise, the
// promises awaited; topics are made with a kmsg CreateTopics request (kadm is a module of its
// own, left out). The consumer polls with PollFetches (PollRecords with -records) and hands
// each record to EachRecord's callback (-iter: takes each from the poll's RecordIter), or, with
// -batch, the records of one poll together.

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { addClient("franz", openFranz) }

type franz struct {
	cfg *config

	mu     sync.Mutex
	cl     *kgo.Client // producing and creating topics; made on first use
	clNone *kgo.Client // producing with compression=none; made on first use
}

func openFranz(cfg *config) client { return &franz{cfg: cfg} }

// common are the options of both clients: dials give up after 2 s, a request that is not a
// produce after 5 s of retries, and metadata may be asked again 250 ms after the last time
// (the default 5 s would keep a new topic or a restarted broker unseen that long).
func (f *franz) common() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(f.cfg.brokers...),
		kgo.ClientID("kafkamix"),
		kgo.DialTimeout(2 * time.Second),
		kgo.RetryTimeout(5 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
}

// producer is the client that produces with COMPRESSION ("" the default, "none").
func (f *franz) producer(compression string) (*kgo.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cl := &f.cl
	if compression == "none" {
		cl = &f.clNone
	}
	if *cl == nil {
		opts := append(f.common(),
			// A record fails after 2 answers that its topic does not exist (default 4), and
			// after 5 s whatever the reason (default: never); a produce request's own bound
			// is 5 s (default 10).
			kgo.UnknownTopicRetries(2),
			kgo.RecordDeliveryTimeout(5*time.Second),
			kgo.ProduceRequestTimeout(5*time.Second),
			kgo.ProducerLinger(5*time.Millisecond),
			kgo.ProducerBatchMaxBytes(int32(maxValueSize+1<<20)),
		)
		// franz-go's idempotent producer (its default) may not fail a record it may have
		// written: with the broker gone after the request went out, a produce waits for the
		// broker's return, whatever its context and the bounds above say. Without it (as
		// sarama's and kafka-go's producers are by default), the bounds hold; -idempotent
		// keeps it.
		if !f.cfg.idempotent {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		// Uncompressed batches, where franz-go's default is snappy (with fallbacks).
		if compression == "none" {
			opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
		}
		c, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, fmt.Errorf("franz-go: cannot make a client: %w", err)
		}
		*cl = c
	}
	return *cl, nil
}

func (f *franz) produce(ctx context.Context, req *produceRequest) ([]produced, error) {
	cl, err := f.producer(req.compression)
	if err != nil {
		return nil, err
	}
	records := make([]*kgo.Record, len(req.values))
	out := make([]produced, len(req.values))
	for i, v := range req.values {
		r := &kgo.Record{Topic: req.topic, Key: req.key, Value: v}
		for _, h := range req.headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.name, Value: h.value})
		}
		records[i] = r
		out[i] = req.report(i)
	}
	if !req.async {
		if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
			return nil, err
		}
		for i, r := range records {
			out[i].at(r.Partition, r.Offset)
		}
		return out, nil
	}
	errs := make(chan error, len(records))
	for _, r := range records {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) { errs <- err })
	}
	var first error
	for range records {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	for i, r := range records {
		out[i].at(r.Partition, r.Offset)
	}
	return out, nil
}

func (f *franz) createTopic(ctx context.Context, name string, partitions int) error {
	cl, err := f.producer("")
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = name
	t.NumPartitions = int32(partitions)
	t.ReplicationFactor = 1
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			if rt.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *rt.ErrorMessage)
			}
			return err
		}
	}
	return nil
}

func franzMessage(r *kgo.Record) message {
	m := message{topic: r.Topic, partition: r.Partition, offset: r.Offset, key: r.Key,
		value: r.Value}
	for _, h := range r.Headers {
		m.headers = append(m.headers, header{h.Key, h.Value})
	}
	return m
}

func (f *franz) consume(ctx context.Context, c *consumer) error {
	opts := append(f.common(),
		kgo.ConsumerGroup(f.cfg.group),
		kgo.ConsumeTopics(f.cfg.consume...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// A fetch waits at most 500 ms for data (default 5 s), so a stop is quick.
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("franz-go: cannot make a consumer client: %w", err)
	}
	defer func() {
		commitCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := cl.CommitUncommittedOffsets(commitCtx); err != nil {
			c.fail(fmt.Errorf("committing at stop: %w", err))
		}
		cl.Close()
	}()
	for {
		var fs kgo.Fetches
		if f.cfg.records {
			fs = cl.PollRecords(ctx, 100)
		} else {
			fs = cl.PollFetches(ctx)
		}
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		fs.EachError(func(topic string, partition int32, err error) {
			c.fail(fmt.Errorf("topic %s partition %d: %w", topic, partition, err))
		})
		if f.cfg.batch {
			var ms []message
			fs.EachRecord(func(r *kgo.Record) { ms = append(ms, franzMessage(r)) })
			c.process(ctx, ms...)
			continue
		}
		if f.cfg.iter {
			for it := fs.RecordIter(); !it.Done(); {
				c.process(ctx, franzMessage(it.Next()))
			}
			continue
		}
		fs.EachRecord(func(r *kgo.Record) { c.process(ctx, franzMessage(r)) })
	}
}

func (f *franz) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cl := range []*kgo.Client{f.cl, f.clNone} {
		if cl != nil {
			cl.Close()
		}
	}
}
