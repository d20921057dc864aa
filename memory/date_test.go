package memory_test

import (
	"encoding/json"
	"testing"
	"time"
	_ "time/tzdata" // the tests need Asia/Kolkata even on a host without zoneinfo

	"github.com/deskd/deskd/memory"
)

func kolkata(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func date(s string) memory.Date {
	d, err := memory.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestTradingDayDateOf(t *testing.T) {
	ist := kolkata(t)
	tests := []struct {
		name  string
		start time.Duration
		at    string
		want  string
	}{
		// IST midnight is 18:30Z the day before.
		{"start0 just before IST midnight", 0, "2025-01-01T18:29:59.999999999Z", "2025-01-01"},
		{"start0 at IST midnight", 0, "2025-01-01T18:30:00Z", "2025-01-02"},
		{"start0 UTC midnight is IST morning", 0, "2025-01-02T00:00:00Z", "2025-01-02"},
		{"start0 UTC date still the day before", 0, "2025-01-01T20:00:00Z", "2025-01-02"},
		{"start0 year end", 0, "2024-12-31T18:30:00Z", "2025-01-01"},
		{"start0 leap day", 0, "2024-02-28T18:30:00Z", "2024-02-29"},
		{"start6h at IST midnight is still yesterday", 6 * time.Hour, "2025-01-01T18:30:00Z", "2025-01-01"},
		{"start6h just before 06:00 IST", 6 * time.Hour, "2025-01-02T00:29:59Z", "2025-01-01"},
		{"start6h at 06:00 IST", 6 * time.Hour, "2025-01-02T00:30:00Z", "2025-01-02"},
		{"start6h IST evening", 6 * time.Hour, "2025-01-02T17:00:00Z", "2025-01-02"},
		{"start6h30m before", 6*time.Hour + 30*time.Minute, "2025-01-02T00:59:00Z", "2025-01-01"},
		{"start6h30m at", 6*time.Hour + 30*time.Minute, "2025-01-02T01:00:00Z", "2025-01-02"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			td := memory.TradingDay{Location: ist, Start: tt.start}
			if got := td.DateOf(utc(tt.at)).String(); got != tt.want {
				t.Errorf("DateOf(%s) = %s, want %s", tt.at, got, tt.want)
			}
		})
	}
}

// TestTradingDayIgnoresOtherZones shows that neither the zone of the
// instant passed in nor the host's zone (time.Local) changes the answer:
// DateOf uses only its Location.
func TestTradingDayIgnoresOtherZones(t *testing.T) {
	ist := kolkata(t)
	// Far from IST on both sides: UTC+14 and UTC-10.
	kiritimati, err := time.LoadLocation("Pacific/Kiritimati")
	if err != nil {
		t.Fatal(err)
	}
	honolulu, err := time.LoadLocation("Pacific/Honolulu")
	if err != nil {
		t.Fatal(err)
	}
	saved := time.Local
	t.Cleanup(func() { time.Local = saved })

	tests := []struct {
		at, want string
	}{
		{"2025-01-01T18:29:00Z", "2025-01-01"},
		{"2025-01-01T18:30:00Z", "2025-01-02"},
		{"2025-01-02T10:00:00Z", "2025-01-02"},
	}
	td := memory.TradingDay{Location: ist}
	for _, host := range []*time.Location{time.UTC, kiritimati, honolulu} {
		time.Local = host
		for _, tt := range tests {
			for _, in := range []*time.Location{time.UTC, kiritimati, honolulu, time.Local} {
				got := td.DateOf(utc(tt.at).In(in)).String()
				if got != tt.want {
					t.Errorf("host %s, instant %s shown in %s: DateOf = %s, want %s", host, tt.at, in, got, tt.want)
				}
			}
		}
	}
}

func TestTradingDayStartOfAndNextBoundary(t *testing.T) {
	ist := kolkata(t)
	tests := []struct {
		start    time.Duration
		at       string
		wantNext string
	}{
		{0, "2025-01-01T18:29:59Z", "2025-01-01T18:30:00Z"},
		{0, "2025-01-01T18:30:00Z", "2025-01-02T18:30:00Z"},
		{6 * time.Hour, "2025-01-01T18:30:00Z", "2025-01-02T00:30:00Z"},
		{6 * time.Hour, "2025-01-02T00:30:00Z", "2025-01-03T00:30:00Z"},
	}
	for _, tt := range tests {
		td := memory.TradingDay{Location: ist, Start: tt.start}
		got := td.NextBoundary(utc(tt.at))
		if !got.Equal(utc(tt.wantNext)) {
			t.Errorf("start %s: NextBoundary(%s) = %s, want %s", tt.start, tt.at, got.UTC(), tt.wantNext)
		}
		d := td.DateOf(utc(tt.at))
		if s := td.StartOf(d); utc(tt.at).Before(s) || !utc(tt.at).Before(td.StartOf(d.AddDays(1))) {
			t.Errorf("start %s: %s is not within trading date %s", tt.start, tt.at, d)
		}
	}
}

func TestParseDate(t *testing.T) {
	tests := []struct {
		in    string
		want  memory.Date
		valid bool
	}{
		{"2025-01-02", memory.Date{Year: 2025, Month: time.January, Day: 2}, true},
		{"2024-02-29", memory.Date{Year: 2024, Month: time.February, Day: 29}, true},
		{"2025-02-29", memory.Date{}, false},
		{"2025-1-2", memory.Date{}, false},
		{"20250102", memory.Date{}, false},
		{"", memory.Date{}, false},
	}
	for _, tt := range tests {
		got, err := memory.ParseDate(tt.in)
		if (err == nil) != tt.valid {
			t.Errorf("ParseDate(%q) error = %v, want valid %v", tt.in, err, tt.valid)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseDate(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if tt.valid && got.String() != tt.in {
			t.Errorf("ParseDate(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestDateMethods(t *testing.T) {
	tests := []struct {
		d     string
		add   int
		want  string
		valid bool
	}{
		{"2024-12-31", 1, "2025-01-01", true},
		{"2024-03-01", -1, "2024-02-29", true},
		{"2025-01-10", -10, "2024-12-31", true},
		{"2025-01-10", 0, "2025-01-10", true},
	}
	for _, tt := range tests {
		d := date(tt.d)
		got := d.AddDays(tt.add)
		if got.String() != tt.want {
			t.Errorf("%s.AddDays(%d) = %s, want %s", tt.d, tt.add, got, tt.want)
		}
		if tt.add > 0 && !d.Before(got) || tt.add < 0 && !got.Before(d) || tt.add == 0 && (d.Before(got) || got.Before(d)) {
			t.Errorf("Before disagrees with AddDays(%d) for %s", tt.add, tt.d)
		}
		if d.Valid() != tt.valid {
			t.Errorf("%s.Valid() = %v", tt.d, d.Valid())
		}
	}
	invalid := []memory.Date{{}, {Year: 2025, Month: 2, Day: 30}, {Year: 2025, Month: 13, Day: 1}, {Year: 10000, Month: 1, Day: 1}}
	for _, d := range invalid {
		if d.Valid() {
			t.Errorf("%+v.Valid() = true", d)
		}
	}
	if !(memory.Date{}).IsZero() || date("2025-01-01").IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestDateJSON(t *testing.T) {
	in := struct {
		D memory.Date `json:"d"`
	}{date("2025-03-04")}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"d":"2025-03-04"}` {
		t.Fatalf("marshal = %s", b)
	}
	var out struct {
		D memory.Date `json:"d"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.D != in.D {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"d":"2025-3-4"}`), &out); err == nil {
		t.Fatal("want an error for a bad date")
	}
	// The zero Date round-trips too (a state file whose spend has not
	// counted a day yet must read back after a clean stop).
	zero, err := json.Marshal(struct {
		D memory.Date `json:"d"`
	}{})
	if err != nil {
		t.Fatal(err)
	}
	out.D = date("2025-03-04")
	if err := json.Unmarshal(zero, &out); err != nil || !out.D.IsZero() {
		t.Fatalf("round trip of the zero date %s = %+v, %v", zero, out, err)
	}
}
