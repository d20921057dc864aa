package memory

import (
	"fmt"
	"time"
)

// Date is a trading date: a calendar date with no time of day and no zone.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOfTime returns the calendar date of t in t's own location.
func DateOfTime(t time.Time) Date {
	y, m, d := t.Date()
	return Date{y, m, d}
}

// ParseDate parses YYYY-MM-DD.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, fmt.Errorf("parse date %q: want YYYY-MM-DD", s)
	}
	return DateOfTime(t), nil
}

// String formats the date as YYYY-MM-DD.
func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

// AddDays returns the date n days after d (before, for negative n).
func (d Date) AddDays(n int) Date {
	return DateOfTime(time.Date(d.Year, d.Month, d.Day+n, 12, 0, 0, 0, time.UTC))
}

// Before reports whether d comes before o.
func (d Date) Before(o Date) bool {
	if d.Year != o.Year {
		return d.Year < o.Year
	}
	if d.Month != o.Month {
		return d.Month < o.Month
	}
	return d.Day < o.Day
}

// MarshalText formats the date as YYYY-MM-DD.
func (d Date) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// zeroDate is how MarshalText writes the zero Date (a spend that has not
// counted a day yet, say); UnmarshalText reads it back as the zero Date.
const zeroDate = "0000-00-00"

// UnmarshalText parses YYYY-MM-DD, and zeroDate as the zero Date (what
// MarshalText writes of it).
func (d *Date) UnmarshalText(b []byte) error {
	if string(b) == zeroDate {
		*d = Date{}
		return nil
	}
	p, err := ParseDate(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// TradingDay maps instants to trading dates: the trading date is the
// calendar date in Location, with each day starting Start after midnight
// (the config's rollover_at). This is the one place deskd computes it.
// Only Location (which must not be nil) decides: neither the zone of the
// instants passed in nor the host's zone (time.Local) matters.
type TradingDay struct {
	Location *time.Location
	Start    time.Duration
}

// DateOf returns the trading date that instant t falls in.
func (td TradingDay) DateOf(t time.Time) Date {
	local := t.In(td.Location)
	d := DateOfTime(local)
	if local.Before(td.StartOf(d)) {
		return d.AddDays(-1)
	}
	return d
}

// StartOf returns the instant trading date d begins.
func (td TradingDay) StartOf(d Date) time.Time {
	h := int(td.Start / time.Hour)
	m := int(td.Start % time.Hour / time.Minute)
	return time.Date(d.Year, d.Month, d.Day, h, m, 0, 0, td.Location)
}

// NextBoundary returns the first instant after t at which a new trading date begins.
func (td TradingDay) NextBoundary(t time.Time) time.Time {
	return td.StartOf(td.DateOf(t).AddDays(1))
}

// Valid reports whether d is a real calendar day in years 1 to 9999.
func (d Date) Valid() bool {
	if d.Year < 1 || d.Year > 9999 {
		return false
	}
	return DateOfTime(time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC)) == d
}
