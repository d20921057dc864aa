// Package logtest gives tests a Buffer that a logger, a child process or
// any other writer writes from several goroutines while the test reads
// what it holds so far.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: writes and reads may
// come from any goroutine. The zero Buffer is empty and ready to use; a
// Buffer must not be copied after its first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
