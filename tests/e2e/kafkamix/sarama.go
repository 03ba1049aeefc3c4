//go:build sarama

// The /sarama/ routes and consumer: github.com/IBM/sarama (github.com/Shopify/sarama before
// v1.41; build.sh rewrites the import for those). Produce is one SyncProducer call (SendMessage
// for one message, SendMessages for more) or, async, the messages sent on AsyncProducer.Input()
// and their results awaited on Successes() and Errors(); the consumer a ConsumerGroup whose
// handler's ConsumeClaim ranges over claim.Messages() (with -select: receives from it in a
// select with the session's end) and marks each message once processed. SIGUSR1 makes the
// consumer join its group again.

package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

func init() { addClient("sarama", openSarama) }

// saramaClient makes its producers on first use (sarama connects as it makes them, and the
// broker may not be up yet), and again after a failed attempt.
type saramaClient struct {
	cfg *config

	mu    sync.Mutex
	sync  sarama.SyncProducer
	async sarama.AsyncProducer
}

// saramaTicket rides in an async message's Metadata, so its result finds its request.
type saramaTicket struct {
	index   int
	results chan<- saramaResult
}

type saramaResult struct {
	index int
	msg   *sarama.ProducerMessage
	err   error
}

func openSarama(cfg *config) client { return &saramaClient{cfg: cfg} }

func (s *saramaClient) config() *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "kafkamix"
	c.Version = sarama.V2_8_0_0
	// Dials give up after 2 s, requests after 5 s; metadata is asked 2 more times 250 ms
	// apart, and a produce retried twice 250 ms apart: a topic that does not exist or a broker
	// that went away fails a produce within seconds.
	c.Net.DialTimeout = 2 * time.Second
	c.Net.ReadTimeout = 5 * time.Second
	c.Net.WriteTimeout = 5 * time.Second
	c.Metadata.Retry.Max = 2
	c.Metadata.Retry.Backoff = 250 * time.Millisecond
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Timeout = 5 * time.Second
	c.Producer.Retry.Max = 2
	c.Producer.Retry.Backoff = 250 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.MaxMessageBytes = maxValueSize + 1<<20
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 500 * time.Millisecond
	return c
}

func (s *saramaClient) syncProducer() (sarama.SyncProducer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sync == nil {
		p, err := sarama.NewSyncProducer(s.cfg.brokers, s.config())
		if err != nil {
			return nil, fmt.Errorf("sarama: cannot make a SyncProducer: %w", err)
		}
		s.sync = p
	}
	return s.sync, nil
}

func (s *saramaClient) asyncProducer() (sarama.AsyncProducer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.async == nil {
		p, err := sarama.NewAsyncProducer(s.cfg.brokers, s.config())
		if err != nil {
			return nil, fmt.Errorf("sarama: cannot make an AsyncProducer: %w", err)
		}
		go func() {
			for m := range p.Successes() {
				t := m.Metadata.(saramaTicket)
				t.results <- saramaResult{t.index, m, nil}
			}
		}()
		go func() {
			for e := range p.Errors() {
				t := e.Msg.Metadata.(saramaTicket)
				t.results <- saramaResult{t.index, e.Msg, e.Err}
			}
		}()
		s.async = p
	}
	return s.async, nil
}

func (s *saramaClient) messages(req *produceRequest) []*sarama.ProducerMessage {
	msgs := make([]*sarama.ProducerMessage, len(req.values))
	for i, v := range req.values {
		m := &sarama.ProducerMessage{Topic: req.topic, Value: sarama.ByteEncoder(v)}
		if req.key != nil {
			m.Key = sarama.ByteEncoder(req.key)
		}
		for _, h := range req.headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.name),
				Value: h.value})
		}
		msgs[i] = m
	}
	return msgs
}

func (s *saramaClient) produce(ctx context.Context, req *produceRequest) ([]produced, error) {
	msgs := s.messages(req)
	out := make([]produced, len(msgs))
	for i := range out {
		out[i] = req.report(i)
	}
	if req.async {
		return s.produceAsync(ctx, req, msgs, out)
	}
	p, err := s.syncProducer()
	if err != nil {
		return nil, err
	}
	if len(msgs) == 1 {
		partition, offset, err := p.SendMessage(msgs[0])
		if err != nil {
			return nil, err
		}
		out[0].at(partition, offset)
		return out, nil
	}
	if err := p.SendMessages(msgs); err != nil {
		// "kafka: Failed to deliver N messages.": say why, too.
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) && len(perrs) > 0 {
			return nil, fmt.Errorf("%w (the first: %v)", err, perrs[0].Err)
		}
		return nil, err
	}
	for i, m := range msgs {
		out[i].at(m.Partition, m.Offset)
	}
	return out, nil
}

func (s *saramaClient) produceAsync(ctx context.Context, req *produceRequest,
	msgs []*sarama.ProducerMessage, out []produced) ([]produced, error) {
	p, err := s.asyncProducer()
	if err != nil {
		return nil, err
	}
	results := make(chan saramaResult, len(msgs))
	ready := make(chan struct{})
	close(ready)
	var unsent []*sarama.ProducerMessage
	for i, m := range msgs {
		m.Metadata = saramaTicket{i, results}
		if req.offer {
			select {
			case p.Input() <- m:
				out[i].Via = "async"
			case <-ready:
				out[i].Via = "sync"
				unsent = append(unsent, m)
			}
			continue
		}
		select {
		case p.Input() <- m:
		case <-ctx.Done():
			return nil, fmt.Errorf("sarama: the AsyncProducer took %d of %d messages: %w", i,
				len(msgs), ctx.Err())
		}
	}
	if len(unsent) > 0 {
		if err := s.sendOffered(unsent, out); err != nil {
			return nil, err
		}
	}
	var first error
	for n := 0; n < len(msgs)-len(unsent); n++ {
		select {
		case r := <-results:
			if r.err != nil && first == nil {
				first = r.err
			}
			out[r.index].at(r.msg.Partition, r.msg.Offset)
		case <-ctx.Done():
			return nil, fmt.Errorf("sarama: %d of %d messages not reported: %w",
				len(msgs)-n, len(msgs), ctx.Err())
		}
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// sendOffered sends MSGS, which the AsyncProducer was offered but not given, through the
// SyncProducer: the same *ProducerMessage values, as an application that falls back would.
func (s *saramaClient) sendOffered(msgs []*sarama.ProducerMessage, out []produced) error {
	p, err := s.syncProducer()
	if err != nil {
		return err
	}
	if err := p.SendMessages(msgs); err != nil {
		return err
	}
	for _, m := range msgs {
		out[m.Metadata.(saramaTicket).index].at(m.Partition, m.Offset)
	}
	return nil
}

func (s *saramaClient) createTopic(ctx context.Context, name string, partitions int) error {
	admin, err := sarama.NewClusterAdmin(s.cfg.brokers, s.config())
	if err != nil {
		return fmt.Errorf("sarama: cannot make a ClusterAdmin: %w", err)
	}
	defer admin.Close()
	return admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: int32(partitions),
		ReplicationFactor: 1}, false)
}

type saramaHandler struct{ c *consumer }

func (h saramaHandler) Setup(sarama.ConsumerGroupSession) error { h.c.began(); return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession,
	claim sarama.ConsumerGroupClaim) error {
	if h.c.cfg.selectRecv {
		return h.consumeSelect(sess, claim)
	}
	for m := range claim.Messages() {
		h.handle(sess, m)
	}
	return nil
}

// consumeSelect is ConsumeClaim as sarama's examples write it: a select on the claim's channel
// and the session's end.
func (h saramaHandler) consumeSelect(sess sarama.ConsumerGroupSession,
	claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.handle(sess, m)
		case <-sess.Context().Done():
			return nil
		}
	}
}

// handle processes the message M and marks it processed.
func (h saramaHandler) handle(sess sarama.ConsumerGroupSession, m *sarama.ConsumerMessage) {
	msg := message{topic: m.Topic, partition: m.Partition, offset: m.Offset, key: m.Key,
		value: m.Value}
	for _, hd := range m.Headers {
		msg.headers = append(msg.headers, header{string(hd.Key), hd.Value})
	}
	h.c.process(sess.Context(), msg)
	sess.MarkMessage(m, "")
}

func (s *saramaClient) consume(ctx context.Context, c *consumer) error {
	var g sarama.ConsumerGroup
	for {
		var err error
		if g, err = sarama.NewConsumerGroup(s.cfg.brokers, s.cfg.group, s.config()); err == nil {
			break
		}
		c.fail(fmt.Errorf("cannot make a ConsumerGroup: %w", err))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
	defer g.Close()
	go func() {
		for err := range g.Errors() {
			c.fail(err)
		}
	}()
	// SIGUSR1 ends the session (its claims' ConsumeClaim return), and the group is joined
	// again: new claims, made while the tests watch.
	rejoin := make(chan os.Signal, 1)
	signal.Notify(rejoin, syscall.SIGUSR1)
	defer signal.Stop(rejoin)
	// Consume returns at every rebalance: join again until told to stop.
	for ctx.Err() == nil {
		sessCtx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-rejoin:
				log.Printf("kafkamix: SIGUSR1: the sarama consumer joins its group again")
				cancel()
			case <-sessCtx.Done():
			}
		}()
		err := g.Consume(sessCtx, s.cfg.consume, saramaHandler{c})
		cancel()
		if err != nil && ctx.Err() == nil {
			c.fail(err)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

func (s *saramaClient) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sync != nil {
		s.sync.Close()
	}
	if s.async != nil {
		s.async.AsyncClose()
	}
}
