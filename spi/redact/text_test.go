package redact_test

import (
	"strings"
	"testing"

	"github.com/ejob-io/ejob/spi/redact"
)

// The secrets a job's props carry inside free text (command lines,
// request bodies, header lists), however they are quoted or encoded, are
// masked; the text around them is kept.
func TestText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		// Headers in command lines.
		`curl -H "Authorization: Bearer eyJhbGciOi.abc" https://h/x`: `curl -H "Authorization: Bearer ***" https://h/x`,
		`curl -H 'Authorization: Bearer eyJ abc' -d x`:               `curl -H 'Authorization: Bearer ***' -d x`,
		`curl -H "X-Api-Key: k1 k2" https://h/`:                      `curl -H "X-Api-Key: ***" https://h/`,
		`curl -H "Cookie: session=abc; id=2"`:                        `curl -H "Cookie: ***"`,
		`curl -H \"Authorization: Basic dTpw\"`:                      `curl -H \"Authorization: Basic ***\"`,
		"Authorization: Bearer abc\r\nAccept: */*":                   "Authorization: Bearer ***\r\nAccept: */*",
		`auth=Bearer abc`:                         `auth=Bearer ***`,
		`wget --header=Authorization:Bearer\ abc`: `wget --header=Authorization:***\ abc`,
		`echo Bearer abc.def-1`:                   `echo Bearer ***`,
		// key=value and key: value.
		`apikey=abc123&x=1`:                 `apikey=***&x=1`,
		`api_key=abc&api%5Fkey=def`:         `api_key=***&api%5Fkey=***`,
		`password%3Dabc%26x%3D1`:            `password%3D***`,
		`PGPASSWORD=s3cr3t psql -h db`:      `PGPASSWORD=*** psql -h db`,
		`export API_TOKEN='a b c'; run`:     `export API_TOKEN='***'; run`,
		`password="a \" b" rest`:            `password="***" rest`,
		`password: 'p''a ss: #SECRET' tail`: `password: '***' tail`,
		`run --password=hunter2 --fast`:     `run --password=*** --fast`,
		`token:abc,user:bob`:                `token:***,user:bob`,
		// JSON bodies, plain and escaped.
		`{"user":"bob","password":"hunter2","n":1}`:     `{"user":"bob","password":"***","n":1}`,
		`{"apiKey": "k", "accessToken" : "t"}`:          `{"apiKey": "***", "accessToken" : "***"}`,
		`{"token": 12345, "user": "bob"}`:               `{"token": ***, "user": "bob"}`,
		`{"credentials": {"a": "b", "c": [1]}, "x": 1}`: `{"credentials": ***, "x": 1}`,
		`curl -d "{\"secret\":\"s3\",\"x\":1}"`:         `curl -d "{\"secret\":\"***\",\"x\":1}"`,
		// Flags with a space.
		`mysqldump --password hunter2 db`: `mysqldump --password *** db`,
		`tool --token "a b" --verbose`:    `tool --token "***" --verbose`,
		`keytool -storepass changeit -v`:  `keytool -storepass *** -v`,
		`tool --api-key=k --user-key abc`: `tool --api-key=*** --user-key ***`,
		`curl -u alice:wonder https://h/`: `curl -u alice:*** https://h/`,
		`curl --user=alice:wonder`:        `curl --user=alice:***`,
		`curl -ualice:wonder`:             `curl -ualice:***`,
		`curl --proxy-user 'p:q' x`:       `curl --proxy-user 'p:***' x`,
		// URLs inside text, percent-encoded or not.
		`curl "https://bob:p%40ss@h/p?token=t0k&x=1"`: `curl "https://***@h/p?token=***&x=***"`,
		`wget http://h/a?sig=abc#frag done`:           `wget http://h/a?sig=*** done`,
		`mongo app:pw@db:27017/app`:                   `mongo app:***@db:27017/app`,
		// Nothing secret: kept as it is.
		`echo hello world`:                    `echo hello world`,
		`/opt/run.sh --fast -n 3 max_count=2`: `/opt/run.sh --fast -n 3 max_count=2`,
		`ssh -p 22 host date`:                 `ssh -p 22 host date`,
		`basic setup: done, time 12:30`:       `basic setup: done, time 12:30`,
		`https://example.com/run`:             `https://example.com/run`,
		`jobInstanceId: 10.0.0.1@-@7`:         `jobInstanceId: 10.0.0.1@-@7`,
		`git@github.com:org/repo.git`:         `git@github.com:org/repo.git`,
		"":                                    "",
	} {
		got := redact.Text(in)
		if got != in && !redact.MayHoldSecret(in) {
			t.Errorf("MayHoldSecret(%q) = false, but Text masks it", in)
		}
		if got != want {
			t.Errorf("Text(%q)\n = %q\nwant %q", in, got, want)
		}
		if again := redact.Text(got); again != got {
			t.Errorf("Text(Text(%q)) = %q, want %q", in, again, got)
		}
	}
}

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"email.password": true, "webhook.headers.X-Api-Key": true, "webhook.secret": true, "slack.token": true,
		"apiKey": true, "API_KEY": true, "client_secret": true, "PGPASSWORD": true, "my.authToken": true,
		"db.pwd": true, "Authorization": true, "keystore.storepass": true, "x.cookie": true, "dingtalk.secret": true,
		"script.command.line": false, "http.data": false, "http.uri": false, "dingtalk.keyword": false,
		"email.username": false, "http.connect.timeout.milliseconds": false, "monkey": false, "": false,
	} {
		if got := redact.IsSecretKey(key); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// The props of finding-shaped jobs: no secret survives Value, and the
// masked form written back is recognised (Unmask).
func TestValueHidesEverySecret(t *testing.T) {
	t.Parallel()
	const secret = "S3CR3T"
	props := map[string]string{
		"script.command.line": `curl -sf -H "Authorization: Bearer ` + secret + `" https://h/run`,
		"http.data":           "apikey=" + secret + "&x=1",
		"http.uri":            "https://user:" + secret + "@h/p?token=" + secret,
		"webhook.headers.X-A": secret,
		"email.password":      "p'a ss: #" + secret,
		"description.note":    `{"password": "` + secret + `"}`,
	}
	for k, v := range props {
		if got := redact.Value(k, v); strings.Contains(got, secret) {
			t.Errorf("Value(%q, %q) = %q keeps the secret", k, v, got)
		}
	}
	masked := redact.Props(props)
	if back, err := redact.Unmask(masked, props); err != nil || back["http.data"] != props["http.data"] || back["script.command.line"] != props["script.command.line"] {
		t.Errorf("Unmask of the masked props = %v, %v; want the stored values", back, err)
	}
}
