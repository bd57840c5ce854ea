// The Go teaching pipeline this project ports, rebuilt from its description (the shared design notes
// and bench/baselines/naive-go-bucket.ts, the line-for-line port of its token bucket) for the seed
// comparison in bench/seed.bench.ts: a generator of articles, a pool of workers, two calls per
// article (summarize, then sentiment) to a simulated provider answering in minLatency–maxLatency,
// and a token bucket in front of every call whose Acquire polls — refill, take a token if there is
// one, else sleep (1 − tokens) / rate and go round again.
//
//	go build -o news-processor-go . && ./news-processor-go -articles=5 -workers=5 -rate=3 -burst=1
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"sync"
	"time"
)

type TokenBucket struct {
	mu         sync.Mutex
	tokens     float64
	maxTokens  float64
	refillRate float64
	lastRefill time.Time
}

func NewTokenBucket(rate float64, burst int) *TokenBucket {
	return &TokenBucket{tokens: float64(burst), maxTokens: float64(burst), refillRate: rate, lastRefill: time.Now()}
}

func (b *TokenBucket) refill() {
	now := time.Now()
	elapsed := now.Sub(b.lastRefill).Seconds()
	b.tokens += elapsed * b.refillRate
	if b.tokens > b.maxTokens {
		b.tokens = b.maxTokens
	}
	b.lastRefill = now
}

func (b *TokenBucket) Acquire(ctx context.Context) error {
	for {
		b.mu.Lock()
		b.refill()
		if b.tokens >= 1 {
			b.tokens--
			b.mu.Unlock()
			return nil
		}
		wait := time.Duration((1 - b.tokens) / b.refillRate * float64(time.Second))
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

type Article struct {
	ID    int
	Title string
	Text  string
}

type Result struct {
	ID        int
	Summary   string
	Sentiment string
}

func call(ctx context.Context, bucket *TokenBucket, minLatency, maxLatency time.Duration, task string, article Article) (string, error) {
	if err := bucket.Acquire(ctx); err != nil {
		return "", err
	}
	latency := minLatency
	if maxLatency > minLatency {
		latency += time.Duration(rand.Int63n(int64(maxLatency - minLatency)))
	}
	time.Sleep(latency)
	return fmt.Sprintf("%s of article %d", task, article.ID), nil
}

func main() {
	articles := flag.Int("articles", 5, "articles to generate")
	workers := flag.Int("workers", 5, "workers")
	rate := flag.Float64("rate", 3, "calls per second")
	burst := flag.Int("burst", 3, "bucket size")
	minLatency := flag.Duration("min-latency", time.Millisecond, "simulated latency, least")
	maxLatency := flag.Duration("max-latency", 2*time.Millisecond, "simulated latency, most")
	flag.Parse()

	start := time.Now()
	ctx := context.Background()
	bucket := NewTokenBucket(*rate, *burst)
	jobs := make(chan Article)
	results := make(chan Result)
	go func() {
		for i := 1; i <= *articles; i++ {
			jobs <- Article{ID: i, Title: fmt.Sprintf("Article %d", i), Text: "text"}
		}
		close(jobs)
	}()
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for article := range jobs {
				summary, _ := call(ctx, bucket, *minLatency, *maxLatency, "summary", article)
				sentiment, _ := call(ctx, bucket, *minLatency, *maxLatency, "sentiment", article)
				results <- Result{ID: article.ID, Summary: summary, Sentiment: sentiment}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	done := 0
	for range results {
		done++
	}
	fmt.Printf("Processed %d articles in %v\n", done, time.Since(start))
}
