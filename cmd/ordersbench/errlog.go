package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// errorLog counts errors by command and message, keeping a bounded number of
// distinct messages so a failing server cannot grow it without limit.
type errorLog struct {
	mu     sync.Mutex
	counts map[string]int
	other  int
}

const maxErrorKinds = 20

// add counts err for cmd. Redirections are counted by kind (MOVED, ASK),
// not by slot and address, so they do not crowd out other messages.
func (l *errorLog) add(cmd string, err error) {
	msg := err.Error()
	for _, redirect := range []string{"MOVED ", "ASK "} {
		if strings.HasPrefix(msg, redirect) {
			msg = strings.TrimSpace(redirect) + " (redirection not followed)"
		}
	}
	k := cmd + ": " + msg
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	if _, ok := l.counts[k]; ok || len(l.counts) < maxErrorKinds {
		l.counts[k]++
		return
	}
	l.other++
}

// Summary lists "count× message" lines, most frequent first.
func (l *errorLog) Summary() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if l.counts[a] != l.counts[b] {
			return l.counts[b] - l.counts[a]
		}
		if a < b {
			return -1
		}
		return 1
	})
	out := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d× %s", l.counts[k], k))
	}
	if l.other > 0 {
		out = append(out, fmt.Sprintf("%d× (other messages)", l.other))
	}
	return out
}
