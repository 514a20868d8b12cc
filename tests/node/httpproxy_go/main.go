// Command httpproxy-answers answers, for each JSON line on stdin
//
//	{"httpsProxy": P, "httpProxy": P, "noProxy": N, "url": U}
//
// with the proxy golang.org/x/net/http/httpproxy chooses for a request to U
// (Config{...}.ProxyFunc()(U): config.init, useProxy, parseProxy; proxy.go), one JSON line
//
//	{"proxy": "http://proxy:3128" or null, "scheme": "http", "hostPort": "proxy:3128",
//	 "authorization": "Basic ..." or null, "error": "..." or null}
//
// hostPort is where net/http's transport dials the proxy (transport.go canonicalAddr: the
// proxy URL's port, else its scheme's default), and authorization the Proxy-Authorization it
// sends on the CONNECT (transport.go connectMethodForRequest / dialConn: Basic of the URL's
// user and password).
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"unicode/utf8"

	"golang.org/x/net/http/httpproxy"
	"golang.org/x/net/idna"
)

type request struct {
	HTTPSProxy string `json:"httpsProxy"`
	HTTPProxy  string `json:"httpProxy"`
	NoProxy    string `json:"noProxy"`
	URL        string `json:"url"`
}

type answer struct {
	Proxy         *string `json:"proxy"`
	Scheme        string  `json:"scheme"`
	HostPort      string  `json:"hostPort"`
	Authorization *string `json:"authorization"`
	Error         *string `json:"error"`
}

// Go's net/http transport.go schemePort.
var portMap = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}

// canonicalAddr as net/http's transport.go has it (with its idnaASCII, request.go: only a
// name not all ASCII goes through IDNA, so an ASCII name keeps its case).
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = portMap[u.Scheme]
	}
	host := u.Hostname()
	if !isASCII(host) {
		if v, err := idna.Lookup.ToASCII(host); err == nil {
			host = v
		}
	}
	return net.JoinHostPort(host, port)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func answerFor(r request) answer {
	target, err := url.Parse(r.URL)
	if err != nil {
		message := err.Error()
		return answer{Error: &message}
	}
	config := httpproxy.Config{HTTPSProxy: r.HTTPSProxy, HTTPProxy: r.HTTPProxy, NoProxy: r.NoProxy}
	proxy, err := config.ProxyFunc()(target)
	if err != nil {
		message := err.Error()
		return answer{Error: &message}
	}
	if proxy == nil {
		return answer{}
	}
	text := proxy.String()
	result := answer{Proxy: &text, Scheme: proxy.Scheme, HostPort: canonicalAddr(proxy)}
	if proxy.User != nil {
		password, _ := proxy.User.Password()
		credentials := proxy.User.Username() + ":" + password
		authorization := "Basic " + base64.StdEncoding.EncodeToString([]byte(credentials))
		result.Authorization = &authorization
	}
	return result
}

func main() {
	lines := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for lines.Scan() {
		var r request
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			panic(err)
		}
		if err := out.Encode(answerFor(r)); err != nil {
			panic(err)
		}
	}
	if err := lines.Err(); err != nil {
		panic(err)
	}
}
