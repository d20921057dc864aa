package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/deskd/deskd/memory/durable"
)

// This file holds the rule that keeps secrets out of problems and
// changes: a field whose name says it holds or points at a secret (an API
// key's variable or file, a token file, ...) never has its value quoted,
// because what an operator typed there by mistake may be the secret itself.
// Problems name the field and the reason; changes say that it changed.

// secretField reports whether a config key, or the last part of a dotted
// field, may hold a secret: one of its words (split at _ and -) is key,
// apikey, token, secret, password, passwd, credential(s), or starts with
// auth (auth_token_file, api_key_env, feed_token_file, ...). Counts of
// tokens (day_tokens, max_output_tokens) are not secrets.
func secretField(field string) bool {
	if i := strings.LastIndexAny(field, ".]"); i >= 0 {
		field = field[i+1:]
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(field), func(r rune) bool { return r == '_' || r == '-' }) {
		switch w {
		case "key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials":
			return true
		}
		if strings.HasPrefix(w, "auth") {
			return true
		}
	}
	return false
}

// namesUsualEnv reports whether the value v of the secret field key is
// the name of an environment variable in the usual upper-case form
// (api_key_env: OPENAI_API_KEY): such a name is shown in problems, as the
// operator needs it to mend the environment, where a value of any other
// form may be a key pasted by mistake.
func namesUsualEnv(key, v string) bool {
	return strings.HasSuffix(key, "_env") && usualEnvNameRE.MatchString(v)
}

// minHidden is the shortest value of a secret field that the sink hides
// from every reason: shorter ones would blank out ordinary words.
const minHidden = 8

// hiddenText stands in a reason for the value of a secret field.
const hiddenText = "[value hidden]"

// hide records v, the value of a secret field, so that no later problem
// of this load quotes it.
func (s *sink) hide(v string) {
	if len(strings.TrimSpace(v)) >= minHidden {
		s.hidden = append(s.hidden, v)
	}
}

// scrub replaces every recorded secret value in reason.
func (s *sink) scrub(reason string) string {
	for _, v := range s.hidden {
		reason = strings.ReplaceAll(reason, v, hiddenText)
	}
	return reason
}

// maxSecretFile bounds a key or token file: it holds one secret, not a
// document.
const maxSecretFile = 16 << 10

// readSecretFile reads a key or token file: a regular file (a FIFO or a
// device such as /dev/zero would block, or never end) of at most
// maxSecretFile bytes, through durable.ReadRegular (non-blocking open,
// fstat before the first byte, limited read; a link is followed to a
// regular file, as systemd credentials are). Its errors name neither the
// path nor any of the content, so that a message of a secret field can use
// them.
func readSecretFile(p string) ([]byte, error) {
	b, err := durable.ReadRegular(p, maxSecretFile, durable.Follow)
	var refused *durable.RefusedError
	switch {
	case errors.Is(err, durable.ErrTooLarge):
		return nil, fmt.Errorf("the file it names is larger than %d bytes: want a file that holds only the secret", maxSecretFile)
	case errors.As(err, &refused):
		return nil, fmt.Errorf("the file it names is %s: want a file that holds the secret", refused.Reason)
	case err != nil:
		return nil, fmt.Errorf("cannot read the file it names: %v", pathErr(err))
	}
	return b, nil
}

// checkKeyFile checks that a key or token file is a regular file of at
// most maxSecretFile bytes that holds more than white space. It keeps
// nothing of what it read.
func checkKeyFile(p string) error {
	b, err := readSecretFile(p)
	switch {
	case err != nil:
		return err
	case len(b) == 0:
		return errors.New("the file it names is empty")
	case strings.TrimSpace(string(b)) == "":
		return errors.New("the file it names holds only white space")
	}
	return nil
}

// firstLineToken is the token of a token file: its first line, without
// surrounding white space.
func firstLineToken(b []byte) string {
	tok, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(tok)
}
