package termsafe

import (
	"strconv"
	"strings"
)

// Plural returns n and the noun, in the singular for one and in the
// plural otherwise: "1 problem", "2 problems", "0 triggers", "3 entries",
// "2 batches". The noun is given in the singular.
func Plural(n int, noun string) string {
	return strconv.Itoa(n) + " " + PluralNoun(n, noun)
}

// PluralNoun is Plural without the number.
func PluralNoun(n int, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
