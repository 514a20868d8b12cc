// Renders a k3s containerd template the way k3s does: the user's template, with a base
// template defined as "base", executed with JSON data. Usage: render USER BASE DATA_JSON
package main

import (
	"encoding/json"
	"os"
	"text/template"
)

func main() {
	user, err := os.ReadFile(os.Args[1])
	check(err)
	base, err := os.ReadFile(os.Args[2])
	check(err)
	var data map[string]any
	check(json.Unmarshal([]byte(os.Args[3]), &data))
	t := template.Must(template.New("user").Parse(string(user)))
	template.Must(t.New("base").Parse(string(base)))
	check(t.Execute(os.Stdout, data))
}

func check(err error) {
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
