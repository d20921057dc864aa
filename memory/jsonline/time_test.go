package jsonline_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/jsonline"
)

// checkTimeAgrees fails t when Time and encoding/json disagree on in: one
// accepts it and the other does not, or they read different times (other
// instants, or the same instant in other locations).
func checkTimeAgrees(t *testing.T, in string) {
	t.Helper()
	s := jsonline.New([]byte(in))
	got, ok := s.Time()
	ok = ok && s.End()
	var want time.Time
	err := json.Unmarshal([]byte(in), &want)
	switch {
	case ok && err != nil:
		t.Errorf("Time accepts %s, which encoding/json refuses: %v", in, err)
	case ok && !(got.Equal(want) && got.Location().String() == want.Location().String() && got.Format(time.RFC3339Nano) == want.Format(time.RFC3339Nano)):
		t.Errorf("Time reads %s as %v, encoding/json as %v", in, got, want)
	}
}

// TestTimeReadsUTCAsEncodingJSONDoes: the UTC form deskd writes is read by
// the Scanner's own parser; every near miss (a field out of range, a day
// the month has not, a fraction of ten digits, another zone) is read as
// encoding/json reads it, or refused as it refuses it.
func TestTimeReadsUTCAsEncodingJSONDoes(t *testing.T) {
	accepted := []string{
		`"2026-12-03T12:44:23Z"`,
		`"2026-12-03T12:44:23.7Z"`,
		`"2026-12-03T12:44:23.759859002Z"`,
		`"2024-02-29T23:59:59.000000001Z"`,
		`"0000-01-01T00:00:00Z"`,
		`"2026-03-02T04:00:00.123+05:30"`,
	}
	for _, in := range accepted {
		s := jsonline.New([]byte(in))
		if _, ok := s.Time(); !ok {
			t.Errorf("Time refuses %s", in)
		}
		checkTimeAgrees(t, in)
	}
	for _, in := range []string{
		`"2025-02-29T00:00:00Z"`, `"2026-04-31T00:00:00Z"`, `"2026-00-10T00:00:00Z"`, `"2026-13-10T00:00:00Z"`,
		`"2026-12-03T24:00:00Z"`, `"2026-12-03T12:60:00Z"`, `"2026-12-03T12:44:60Z"`, `"2026-12-03T12:44:23.Z"`,
		`"2026-12-03T12:44:23.1234567891Z"`, `"2026-12-03t12:44:23Z"`, `"2026-12-03T12:44:23z"`, `"2026-1-03T12:44:23Z"`,
		`"+026-12-03T12:44:23Z"`, `"2026-12-03T12:44:2aZ"`, `"2026-12-03T12:44:23,5Z"`, `"2026-12-03 12:44:23Z"`,
	} {
		checkTimeAgrees(t, in)
	}
}

// FuzzTime: on any string, Time and encoding/json agree.
func FuzzTime(f *testing.F) {
	for _, seed := range []string{"2026-12-03T12:44:23Z", "2026-12-03T12:44:23.759859002Z", "2024-02-29T23:59:59Z", "2026-03-02T04:00:00+05:30"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		in, err := json.Marshal(v)
		if err != nil {
			return
		}
		checkTimeAgrees(t, string(in))
	})
}

// TestTimeOfEveryMonthEnd: the first and last day of every month of the
// years 0000 to 9999 read as time.Date gives them, and the day after the
// last is refused, as encoding/json refuses it: the Scanner counts days
// itself, and the leap years are where it could go wrong.
func TestTimeOfEveryMonthEnd(t *testing.T) {
	for year := range 10000 {
		for month := time.January; month <= time.December; month++ {
			last := time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
			for _, day := range []int{1, last} {
				want := time.Date(year, month, day, 23, 59, 58, 123456789, time.UTC)
				in := `"` + want.Format(time.RFC3339Nano) + `"`
				if got, ok := jsonline.New([]byte(in)).Time(); !ok || got != want {
					t.Fatalf("Time(%s) = %v, %v; want %v", in, got, ok, want)
				}
			}
			after := fmt.Sprintf(`"%04d-%02d-%02dT00:00:00Z"`, year, int(month), last+1)
			if _, ok := jsonline.New([]byte(after)).Time(); ok {
				t.Fatalf("Time(%s) accepts a day the month has not", after)
			}
		}
	}
	checkTimeAgrees(t, `"2100-02-29T00:00:00Z"`)
	checkTimeAgrees(t, `"2000-02-29T00:00:00Z"`)
}
