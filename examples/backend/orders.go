// The backend's orders, there with -kafka (or KAFKA_BROKERS): each GET /work/{id} is an order
// for item ID, and once the item is read the backend publishes an order event to a Kafka topic
// with segmentio/kafka-go's Writer, one synchronous WriteMessages call per order, so that the
// request answers only once the broker has the event. gospan makes a PRODUCER span of each call
// ("send orders"), the child of the request's SERVER span, and puts its traceparent into the
// record on the way out, so that the consumer's span (../consumer) continues the trace.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// orderEvent is what the backend publishes per order. The order id comes first: the value's
// first bytes then differ between two orders of one item sent at the same moment (/both's two
// calls), which is how gospan tells their records apart on the wire (docs/messaging.md).
type orderEvent struct {
	Order string    `json:"order"`
	Item  string    `json:"item"`
	Name  string    `json:"name,omitempty"` // the item's name, when the backend read it
	At    time.Time `json:"at"`
}

type orders struct {
	w     *kafka.Writer
	topic string
}

// splitBrokers turns "HOST:PORT,HOST:PORT" into its addresses, blanks left out.
func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// openOrders makes the topic when it is missing (the broker's default partitions and
// replication), retrying for up to setupTimeout while the broker is not up yet, and returns the
// writer of the order events.
func openOrders(brokers []string, topic string) (*orders, error) {
	if err := ensureTopic(brokers, topic); err != nil {
		return nil, err
	}
	return &orders{
		topic: topic,
		w: &kafka.Writer{
			Addr:  kafka.TCP(brokers...),
			Topic: topic,
			// An item's orders in one partition, in the order they were made.
			Balancer: &kafka.Hash{},
			// The default waits up to 1 s for a batch to fill: a request would wait that long.
			BatchTimeout: 10 * time.Millisecond,
			RequiredAcks: kafka.RequireAll,
			// A broker that is away fails an order within seconds, not after the default 10
			// attempts.
			MaxAttempts:  3,
			ReadTimeout:  5 * time.Second,
			WriteTimeout: 5 * time.Second,
		},
	}, nil
}

func ensureTopic(brokers []string, topic string) error {
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	deadline := time.Now().Add(setupTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
			Topic: topic, NumPartitions: -1, ReplicationFactor: -1}}})
		cancel()
		if err == nil {
			err = resp.Errors[topic]
			if err == nil || errors.Is(err, kafka.TopicAlreadyExists) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot make the topic '%s' on Kafka at '%s': %w", topic,
				strings.Join(brokers, ","), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// publish sends the order event of item ID (IT when the backend read it) and returns its order
// id once the broker has it.
func (o *orders) publish(ctx context.Context, id string, it *item) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	ev := orderEvent{Order: hex.EncodeToString(b[:]), Item: id, At: time.Now().UTC()}
	if it != nil {
		ev.Name = it.Name
	}
	value, _ := json.Marshal(ev) // cannot fail: strings and a time
	err := o.w.WriteMessages(ctx, kafka.Message{Key: []byte(id), Value: value})
	if err != nil {
		return "", fmt.Errorf("cannot publish order '%s' to '%s': %w", ev.Order, o.topic, err)
	}
	return ev.Order, nil
}

func (o *orders) close() error { return o.w.Close() }
