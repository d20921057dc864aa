package memory_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
)

// TestUsageReadsOldRecordsAndWritesNoEmptyCacheFields: a record written
// before deskd counted cache writes reads with none, and a usage without
// cache tokens is written as before (no cache fields).
func TestUsageReadsOldRecordsAndWritesNoEmptyCacheFields(t *testing.T) {
	old := `{"type":"message","at":"2026-03-02T04:00:00Z","role":"assistant","text":"ok","usage":{"input_tokens":1200,"output_tokens":7,"cached_tokens":1024}}`
	var rec memory.Record
	if err := json.Unmarshal([]byte(old), &rec); err != nil {
		t.Fatal(err)
	}
	if want := (memory.Usage{InputTokens: 1200, OutputTokens: 7, CachedTokens: 1024}); rec.Usage == nil || *rec.Usage != want {
		t.Errorf("usage = %+v, want %+v", rec.Usage, want)
	}
	b, _ := json.Marshal(memory.Usage{InputTokens: 10, OutputTokens: 5})
	if got := string(b); got != `{"input_tokens":10,"output_tokens":5}` {
		t.Errorf("usage without cache tokens encodes as %s", got)
	}
	b, _ = json.Marshal(memory.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 3, CacheWriteTokens: 4})
	if got := string(b); !strings.Contains(got, `"cached_tokens":3`) || !strings.Contains(got, `"cache_write_tokens":4`) {
		t.Errorf("usage with cache tokens encodes as %s", got)
	}
}
