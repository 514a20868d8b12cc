// etcd as kube-apiserver's storage for the tests: etcd's own command line (etcdmain), built
// from the go.etcd.io/etcd/server/v3 module pinned in ../go.mod.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
