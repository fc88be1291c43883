package scrub

// Rule is one detector of the built-in table. Pattern is a Go regular
// expression; when it has a group named "secret", only that group is
// replaced (the key name or the URL around it stays readable), otherwise
// the whole match is.
type Rule struct {
	Name    string // the placeholder is "[secret:" + Name + "]"
	Pattern string
	Why     string
	// check, when set, must accept the secret text: it keeps context rules
	// (assignments, "key-like" names) off ordinary words and code.
	check func(secret string) bool
	// need lists literals of which every match contains at least one,
	// compared in lower case: a text holding none is not searched (most
	// chat text holds none of them). needRun, when set, is the length of a
	// run of base64 characters every match contains.
	need    []string
	needRun int
}

// rules is the built-in table, in the order it is applied: specific shapes
// first (so a provider key gets its own name), then the context rules. The
// README's Privacy section lists the same table.
var rules = []Rule{
	{Name: "private-key",
		Pattern: `-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`,
		need:    []string{"-----begin"},
		Why:     "PEM/OpenSSH private key blocks (RSA, EC, DSA, OPENSSH, PGP, encrypted): the whole block, newlines included."},
	{Name: "anthropic-key",
		Pattern: `(?:\b|_)(?P<secret>sk-ant-[A-Za-z0-9_-]{20,})`,
		need:    []string{"sk-ant-"},
		Why:     "Anthropic API and admin keys (sk-ant-api03-..., sk-ant-admin01-...)."},
	{Name: "openai-key",
		Pattern: `(?:\b|_)(?P<secret>sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,})`,
		need:    []string{"sk-"},
		Why:     "OpenAI keys: legacy sk-<48>, project sk-proj-, service-account and admin keys.",
		check:   mixed},
	{Name: "aws-access-key-id",
		Pattern: `(?:\b|_)(?P<secret>(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})\b`,
		need:    []string{"akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "anva", "aipa"},
		Why:     "AWS access key ids (long-term AKIA, temporary ASIA and the other IAM unique-id prefixes)."},
	{Name: "aws-secret-access-key",
		Pattern: `(?i)\baws[a-z_ .-]{0,20}?secret[a-z_ .-]{0,20}?(?:key)?["']?\s*(?:[:=]|:=|=>|\bis\b)\s*["']?(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`,
		need:    []string{"aws"},
		Why:     "AWS secret access keys: 40 base64 characters after a name like aws_secret_access_key or \"AWS secret key is\"."},
	{Name: "aws-secret-access-key",
		Pattern: `(?:^|[^A-Za-z0-9/+=])(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`,
		needRun: 40,
		Why:     "A bare 40-character AWS-shaped secret (mixed case, digits, and / or +) anywhere: the shape alone is rare in prose and code.",
		check:   awsSecretShape},
	{Name: "github-token",
		Pattern: `(?:\b|_)(?P<secret>(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b`,
		need:    []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		Why:     "GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained github_pat_."},
	{Name: "gitlab-token",
		Pattern: `(?:\b|_)(?P<secret>gl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,})`,
		need:    []string{"glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-"},
		Why:     "GitLab personal, deploy, runner, pipeline-trigger and OAuth tokens."},
	{Name: "slack-token",
		Pattern: `\bxox[abposre]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+`,
		need:    []string{"xox", "hooks.slack.com"},
		Why:     "Slack bot, user, app and refresh tokens (xoxb-, xoxp-, xoxa-, ...) and incoming-webhook URLs."},
	{Name: "stripe-key",
		Pattern: `(?:\b|_)(?P<secret>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})`,
		need:    []string{"_live_", "_test_"},
		Why:     "Stripe secret and restricted keys, live and test (publishable pk_ keys are public and kept)."},
	{Name: "google-api-key",
		Pattern: `(?:\b|_)(?P<secret>AIza[0-9A-Za-z_-]{35})`,
		need:    []string{"aiza"},
		Why:     "Google API keys (Maps, Gemini, Firebase...)."},
	{Name: "jwt",
		Pattern: `(?:\b|_)(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,})`,
		need:    []string{"eyj"},
		Why:     "JSON Web Tokens (header.payload.signature, both JSON parts starting with {\")."},
	{Name: "url-password",
		Pattern: `\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'"<>]{1,128}:(?P<secret>[^\s@/'"<>]{1,256})@[A-Za-z0-9.\[\]_-]`,
		need:    []string{"://"},
		Why:     "The password of a connection string or URL (postgres://user:PASSWORD@host); scheme, user and host stay.",
		check:   notTemplate},
	{Name: "bearer-token",
		Pattern: `(?i)\b(?:bearer|token)\s+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)`,
		need:    []string{"bearer", "token"},
		Why:     "An Authorization header's bearer/token credential.",
		check:   highEntropy},
	{Name: "password",
		Pattern: `(?i)\b(?:password|passwd|passphrase|pwd|pass)["']?\s*(?:[:=]|:=|=>)\s*["'](?P<secret>[^"'\n]{4,128})["']`,
		need:    []string{"pass", "pwd"},
		Why:     "A quoted value assigned to a password name (\"password\": \"...\", password = '...'); JSON-schema words such as \"string\" are kept.",
		check:   notTemplate},
	{Name: "password",
		Pattern: `\b[A-Z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|PASS|PWD)=(?P<secret>[^\s"']{4,128})`,
		need:    []string{"pass", "pwd"},
		Why:     "Environment-style DB_PASSWORD=value (.env files, shell).",
		check:   notTemplate},
	{Name: "password",
		Pattern: `(?i)\b(?:password|passwd|passphrase|pwd)["']?\s*(?:[:=]|:=|=>)\s*(?P<secret>[^\s"',;]{4,128})`,
		need:    []string{"pass", "pwd"},
		Why:     "Unquoted password: value (YAML, chat); values that are code, types, variables or placeholders are kept.",
		check:   passwordValue},
	{Name: "password",
		Pattern: `(?i)\b(?:password|passphrase|pwd)\s+(?:is|was|=)\s+["'` + "`" + `]?(?P<secret>[^\s"'` + "`" + `,;]{4,128})`,
		need:    []string{"pass", "pwd"},
		Why:     "\"my password is hunter2\": in prose the value must hold a digit or a symbol, so \"the password is required\" stays.",
		check:   prosePassword},
	{Name: "api-key",
		Pattern: `(?i)\b[a-z0-9_.-]{0,40}?(?:api[_-]?key|apikey|api[_-]?token|access[_-]?token|auth[_-]?token|refresh[_-]?token|secret[_-]?key|client[_-]?secret|app[_-]?secret|secret|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|credentials?|x-api-key)["']?(?:\s*(?:[:=]|:=|=>)|(?:\s+[a-z]+){0,2}\s+is\b)\s*["']?(?P<secret>[A-Za-z0-9+/_.~=-]{16,256})`,
		need:    []string{"key", "token", "secret", "credential"},
		Why:     "High-entropy values (16+ characters, letters and digits, entropy >= 3 bits/char) assigned to key-like names (api_key, client_secret, SECRET_KEY, x-api-key...).",
		check:   highEntropy},
}
