// Command kubelet-devices runs the kubelet's own device-manager code (k8s.io/kubernetes
// v1.34.4, pkg/kubelet/cm/devicemanager) on a folder of our choosing, so that a test can put
// gpuconf's device plugin in front of the real consumer over real unix sockets.
//
// It serves the kubelet's Registration service on <plugin-dir>/kubelet.sock with
// plugin/v1beta1.NewServer (server.go, handler.go), which dials each registering plugin back
// with plugin/v1beta1's client (client.go: grpc-go, ListAndWatch). Every handler call goes to a
// devicemanager.ManagerImpl (manager.go) as it does in the kubelet, and is printed on stdout as
// a JSON line. Commands arrive on stdin as JSON lines, and their replies are printed likewise:
//
//	{"id": 1, "op": "preferred", "resource": R, "available": [..], "mustInclude": [..], "size": n}
//	{"id": 2, "op": "allocate", "resource": R, "containers": [[ids], ..]}
//	{"id": 3, "op": "admit", "pod": UID, "resource": R, "count": n, "init": false}
//	{"id": 4, "op": "release", "pod": UID}
//	{"id": 5, "op": "capacity"}
//	{"id": 6, "op": "lists"}
//	{"id": 7, "op": "learn", "pod": UID, "resource": R, "count": n}
//	{"id": 8, "op": "sources-ready"}
//	{"id": 9, "op": "hang-lists"}
//	{"id": 10, "op": "hanging"}
//	{"id": 11, "op": "answer-lists"}
//
// It also serves the kubelet's pod-resources API (pkg/kubelet/apis/podresources) from the same
// device manager, listing the pods admitted or learnt and not released; "lists" counts its List
// calls. After "hang-lists" every List call waits (a kubelet slow to answer) until
// "answer-lists", then answers with what is known then; "hanging" counts those waiting. The device manager keeps its checkpoint (kubelet_internal_checkpoint) in the plugin
// folder, as the kubelet's does, so a run started on the folder of an earlier one is a kubelet
// restart: it reads the allocations back. With --sources-late, such a run has not seen its pod
// sources yet (the kubelet's config.SourcesReady): it knows no pods until "learn" (a pod the
// API server names again, its devices those on record) and prunes nothing of the checkpoint
// until "sources-ready".
//
// preferred and allocate call the plugin straight through the kubelet's grpc-go client (not
// through endpoint.go, which sends one container per Allocate): a check of the wire format;
// admit is the kubelet admitting a pod: ManagerImpl.Allocate (GetPreferredAllocation when the
// plugin offers it, then Allocate) and GetDeviceRunContainerOptions (PreStartContainer when the
// plugin asks for it), which is what the kubelet hands the container runtime.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubernetes/pkg/kubelet/apis/podresources"
	_ "k8s.io/kubernetes/pkg/kubelet/cm" // go:linkname
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	plugin "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

// newManagerImpl is the constructor the kubelet's own tests use (manager_test.go): the exported
// NewManagerImpl fixes the socket, and so the checkpoint folder, at /var/lib/kubelet/device-plugins.
//
//go:linkname newManagerImpl k8s.io/kubernetes/pkg/kubelet/cm/devicemanager.newManagerImpl
func newManagerImpl(socketPath string, topology []cadvisorapi.Node, store topologymanager.Store) (*devicemanager.ManagerImpl, error)

// containerDevices is how the kubelet's container manager answers the pod-resources API from
// the device manager (pkg/kubelet/cm/container_manager.go): one entry per device and NUMA node.
//
//go:linkname containerDevices k8s.io/kubernetes/pkg/kubelet/cm.containerDevicesFromResourceDeviceInstances
func containerDevices(devs devicemanager.ResourceDeviceInstances) []*podresourcesapi.ContainerDevices

// noAffinity is the topology manager under its default `none` policy: no NUMA hint for anyone.
type noAffinity struct{}

func (noAffinity) GetAffinity(string, string) topologymanager.TopologyHint {
	return topologymanager.TopologyHint{}
}
func (noAffinity) GetPolicy() topologymanager.Policy { return topologymanager.NewNonePolicy() }

// sourcesReady is the kubelet's config.SourcesReady: whether every pod source has been seen.
type sourcesReady struct{ ready atomic.Bool }

func (*sourcesReady) AddSource(string) {}
func (s *sourcesReady) AllReady() bool { return s.ready.Load() }

var stdout = struct {
	sync.Mutex
	*json.Encoder
}{Encoder: json.NewEncoder(os.Stdout)}

func emit(line map[string]any) {
	stdout.Lock()
	defer stdout.Unlock()
	if err := stdout.Encode(line); err != nil {
		klog.Fatalf("writing stdout: %v", err)
	}
}

// protoJSON is a message as canonical proto3 JSON with the .proto field names, what Python's
// json_format.MessageToDict(preserving_proto_field_name=True) gives for the same message.
func protoJSON(message proto.Message) json.RawMessage {
	data, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(message)
	if err != nil {
		klog.Fatalf("encoding %T: %v", message, err)
	}
	return data
}

// kubelet stands between the registration server and the manager, as nothing does in the
// kubelet: it passes every call on unchanged and prints it.
type kubelet struct {
	manager *devicemanager.ManagerImpl
	sources *sourcesReady
	mutex   sync.Mutex
	plugins map[string]plugin.DevicePlugin
	pods    map[string]*v1.Pod
	lists   int
	answer  chan struct{} // closed by answer-lists; nil while List answers at once
	hanging int
}

func (k *kubelet) CleanupPluginDirectory(dir string) error {
	return k.manager.CleanupPluginDirectory(dir)
}

func (k *kubelet) PluginConnected(resourceName string, p plugin.DevicePlugin) error {
	if err := k.manager.PluginConnected(resourceName, p); err != nil {
		emit(map[string]any{"event": "refused", "resource": resourceName, "error": err.Error()})
		return err
	}
	// The manager keeps the options to itself; ask again for the record.
	options, err := p.API().GetDevicePluginOptions(context.Background(), &api.Empty{})
	if err != nil {
		return err
	}
	k.mutex.Lock()
	k.plugins[resourceName] = p
	k.mutex.Unlock()
	emit(map[string]any{
		"event":    "connected",
		"resource": resourceName,
		"endpoint": filepath.Base(p.SocketPath()),
		"options":  protoJSON(options),
	})
	return nil
}

func (k *kubelet) PluginDisconnected(resourceName string) {
	k.manager.PluginDisconnected(resourceName)
	emit(map[string]any{"event": "disconnected", "resource": resourceName})
}

func (k *kubelet) PluginListAndWatchReceiver(resourceName string, response *api.ListAndWatchResponse) {
	k.manager.PluginListAndWatchReceiver(resourceName, response)
	emit(map[string]any{"event": "devices", "resource": resourceName, "response": protoJSON(response)})
}

// The pod-resources API's providers (pkg/kubelet/apis/podresources/types.go): pods are the ones
// admitted and not released; devices come from the device manager as in the container manager
// (container_manager_linux.go GetDevices, GetAllocatableDevices); no CPUs, memory or claims.
func (k *kubelet) GetActivePods() []*v1.Pod { return k.listed() }
func (k *kubelet) GetPods() []*v1.Pod       { return k.listed() }

// listed is the pods the pod-resources List answers with, counted, so that a test can wait
// until a client has seen a change.
func (k *kubelet) listed() []*v1.Pod {
	k.mutex.Lock()
	k.lists++
	answer := k.answer
	if answer != nil {
		k.hanging++
	}
	k.mutex.Unlock()
	if answer != nil {
		<-answer
		k.mutex.Lock()
		k.hanging--
		k.mutex.Unlock()
	}
	return k.activePods()
}
func (k *kubelet) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	k.mutex.Lock()
	defer k.mutex.Unlock()
	pod, ok := k.pods[name]
	return pod, ok && namespace == pod.Namespace
}
func (k *kubelet) UpdateAllocatedDevices() { k.manager.UpdateAllocatedDevices() }
func (k *kubelet) GetDevices(podUID, containerName string) []*podresourcesapi.ContainerDevices {
	return containerDevices(k.manager.GetDevices(podUID, containerName))
}
func (k *kubelet) GetAllocatableDevices() []*podresourcesapi.ContainerDevices {
	return containerDevices(k.manager.GetAllocatableDevices())
}
func (k *kubelet) GetCPUs(string, string) []int64                              { return nil }
func (k *kubelet) GetAllocatableCPUs() []int64                                 { return nil }
func (k *kubelet) GetMemory(string, string) []*podresourcesapi.ContainerMemory { return nil }
func (k *kubelet) GetAllocatableMemory() []*podresourcesapi.ContainerMemory    { return nil }
func (k *kubelet) GetDynamicResources(*v1.Pod, *v1.Container) []*podresourcesapi.DynamicResource {
	return nil
}

// servePodResources is server.go's ListenAndServePodResources (pkg/kubelet/server) less its
// rate limit and the v1alpha1 service.
func (k *kubelet) servePodResources(socket string) error {
	_ = os.Remove(socket)
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	server := grpc.NewServer()
	providers := podresources.PodResourcesProviders{Pods: k, Devices: k, Cpus: k, Memory: k, DynamicResources: k}
	podresourcesapi.RegisterPodResourcesListerServer(server, podresources.NewV1PodResourcesServer(context.Background(), providers))
	go func() {
		if err := server.Serve(listener); err != nil {
			klog.ErrorS(err, "pod resources")
		}
	}()
	return nil
}

func (k *kubelet) activePods() []*v1.Pod {
	k.mutex.Lock()
	defer k.mutex.Unlock()
	pods := make([]*v1.Pod, 0, len(k.pods))
	for _, pod := range k.pods {
		pods = append(pods, pod)
	}
	return pods
}

type command struct {
	ID          int        `json:"id"`
	Op          string     `json:"op"`
	Resource    string     `json:"resource"`
	Available   []string   `json:"available"`
	MustInclude []string   `json:"mustInclude"`
	Size        int32      `json:"size"`
	Containers  [][]string `json:"containers"`
	Pod         string     `json:"pod"`
	Count       int64      `json:"count"`
	Init        bool       `json:"init"`
}

func (k *kubelet) client(resourceName string) (api.DevicePluginClient, error) {
	k.mutex.Lock()
	defer k.mutex.Unlock()
	p, ok := k.plugins[resourceName]
	if !ok {
		return nil, fmt.Errorf("no plugin registered %s", resourceName)
	}
	return p.API(), nil
}

func (k *kubelet) run(c command) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch c.Op {
	case "preferred":
		client, err := k.client(c.Resource)
		if err != nil {
			return nil, err
		}
		response, err := client.GetPreferredAllocation(ctx, &api.PreferredAllocationRequest{
			ContainerRequests: []*api.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: c.Available, MustIncludeDeviceIDs: c.MustInclude, AllocationSize: c.Size,
			}},
		})
		if err != nil {
			return nil, err
		}
		return protoJSON(response), nil
	case "allocate":
		client, err := k.client(c.Resource)
		if err != nil {
			return nil, err
		}
		request := &api.AllocateRequest{}
		for _, ids := range c.Containers {
			request.ContainerRequests = append(request.ContainerRequests, &api.ContainerAllocateRequest{DevicesIds: ids})
		}
		response, err := client.Allocate(ctx, request)
		if err != nil {
			return nil, err
		}
		return protoJSON(response), nil
	case "admit":
		return k.admit(c)
	case "release":
		k.mutex.Lock()
		delete(k.pods, c.Pod)
		k.mutex.Unlock()
		k.manager.UpdateAllocatedDevices()
		return map[string]any{}, nil
	case "learn":
		pod, _ := podAsking(c)
		k.mutex.Lock()
		k.pods[c.Pod] = pod
		k.mutex.Unlock()
		return map[string]any{}, nil
	case "sources-ready":
		k.sources.ready.Store(true)
		return map[string]any{}, nil
	case "lists":
		k.mutex.Lock()
		defer k.mutex.Unlock()
		return k.lists, nil
	case "hang-lists":
		k.mutex.Lock()
		defer k.mutex.Unlock()
		if k.answer == nil {
			k.answer = make(chan struct{})
		}
		return map[string]any{}, nil
	case "hanging":
		k.mutex.Lock()
		defer k.mutex.Unlock()
		return k.hanging, nil
	case "answer-lists":
		k.mutex.Lock()
		defer k.mutex.Unlock()
		if k.answer != nil {
			close(k.answer)
			k.answer = nil
		}
		return map[string]any{}, nil
	case "capacity":
		capacity, allocatable, _ := k.manager.GetCapacity()
		counts := func(list v1.ResourceList) map[string]int64 {
			out := map[string]int64{}
			for name, quantity := range list {
				out[string(name)] = quantity.Value()
			}
			return out
		}
		return map[string]any{"capacity": counts(capacity), "allocatable": counts(allocatable)}, nil
	}
	return nil, fmt.Errorf("unknown op %q", c.Op)
}

// podAsking is a pod named and identified by c.Pod, and its container asking for c.Count of
// c.Resource: "main", or with c.Init a regular (not restartable) init container "init" before
// a "main" that asks for nothing.
func podAsking(c command) (*v1.Pod, *v1.Container) {
	asking := v1.Container{
		Name: "main",
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{
			v1.ResourceName(c.Resource): *resource.NewQuantity(c.Count, resource.DecimalSI),
		}},
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(c.Pod), Name: c.Pod, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{asking}},
	}
	if !c.Init {
		return pod, &pod.Spec.Containers[0]
	}
	asking.Name = "init"
	pod.Spec.InitContainers = []v1.Container{asking}
	pod.Spec.Containers = []v1.Container{{Name: "main"}}
	return pod, &pod.Spec.InitContainers[0]
}

// admit is the kubelet admitting a pod (podAsking) and starting its container asking for count
// of resource: what the container runtime would be given, sorted (the kubelet's own order
// follows Go's map iteration).
func (k *kubelet) admit(c command) (any, error) {
	pod, container := podAsking(c)
	k.mutex.Lock()
	k.pods[c.Pod] = pod
	k.mutex.Unlock()
	// The kubelet allocates every container at admission, init containers first (manager.go
	// Allocate counts on that order).
	every := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	for i := range every {
		if err := k.manager.Allocate(pod, &every[i]); err != nil {
			k.mutex.Lock()
			delete(k.pods, c.Pod)
			k.mutex.Unlock()
			return nil, err
		}
	}
	options, err := k.manager.GetDeviceRunContainerOptions(pod, container)
	if err != nil {
		return nil, err
	}
	devices := sets.List(sets.KeySet(k.manager.GetDevices(c.Pod, container.Name)[c.Resource]))
	envs := map[string]string{}
	annotations := map[string]string{}
	var mounts, deviceSpecs []map[string]any
	var cdi []string
	if options != nil {
		for _, env := range options.Envs {
			envs[env.Name] = env.Value
		}
		for _, annotation := range options.Annotations {
			annotations[annotation.Name] = annotation.Value
		}
		for _, mount := range options.Mounts {
			mounts = append(mounts, map[string]any{
				"containerPath": mount.ContainerPath, "hostPath": mount.HostPath, "readOnly": mount.ReadOnly,
			})
		}
		for _, device := range options.Devices {
			deviceSpecs = append(deviceSpecs, map[string]any{
				"containerPath": device.PathInContainer, "hostPath": device.PathOnHost, "permissions": device.Permissions,
			})
		}
		for _, device := range options.CDIDevices {
			cdi = append(cdi, device.Name)
		}
	}
	byPath := func(list []map[string]any) {
		sort.Slice(list, func(i, j int) bool {
			return list[i]["containerPath"].(string) < list[j]["containerPath"].(string)
		})
	}
	byPath(mounts)
	byPath(deviceSpecs)
	sort.Strings(cdi)
	return map[string]any{
		"devices": devices, "envs": envs, "annotations": annotations,
		"mounts": mounts, "deviceSpecs": deviceSpecs, "cdiDevices": cdi,
	}, nil
}

func main() {
	pluginDir := flag.String("plugin-dir", "", "the kubelet's device-plugins folder: kubelet.sock is served there")
	sourcesLate := flag.Bool("sources-late", false, "start before the pod sources are seen (until sources-ready)")
	podResources := flag.String("pod-resources-socket", "", "where to serve the pod-resources API")
	numaNodes := flag.Int("numa-nodes", 2, "NUMA nodes the machine has")
	klog.InitFlags(nil)
	flag.Parse()
	if *pluginDir == "" || *podResources == "" {
		klog.Fatal("--plugin-dir and --pod-resources-socket are required")
	}
	var topology []cadvisorapi.Node
	for id := range *numaNodes {
		topology = append(topology, cadvisorapi.Node{Id: id})
	}
	// The manager makes its own registration server, on kubelet.sock in the plugin folder, and
	// keeps its checkpoint beside it. Start reads the checkpoint, takes the pod source and
	// starts that server; we stop it at once, and ours on the same socket, which prints what it
	// passes on, takes its place.
	socket := filepath.Join(*pluginDir, api.KubeletSocket[len(api.DevicePluginPath):])
	manager, err := newManagerImpl(socket, topology, noAffinity{})
	if err != nil {
		klog.Fatalf("device manager: %v", err)
	}
	sources := &sourcesReady{}
	sources.ready.Store(!*sourcesLate)
	k := &kubelet{manager: manager, sources: sources, plugins: map[string]plugin.DevicePlugin{}, pods: map[string]*v1.Pod{}}
	if err := manager.Start(k.activePods, sources, containermap.NewContainerMap(), sets.New[string]()); err != nil {
		klog.Fatalf("device manager: %v", err)
	}
	if err := manager.Stop(); err != nil {
		klog.Fatalf("device manager: %v", err)
	}
	server, err := plugin.NewServer(socket, k, k)
	if err != nil {
		klog.Fatalf("registration server: %v", err)
	}
	if err := server.Start(); err != nil {
		klog.Fatalf("registration server: %v", err)
	}
	if err := k.servePodResources(*podResources); err != nil {
		klog.Fatalf("pod resources: %v", err)
	}
	emit(map[string]any{"event": "ready", "socket": server.SocketPath(), "versions": api.SupportedVersions})

	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		var c command
		if err := json.Unmarshal(lines.Bytes(), &c); err != nil {
			klog.Fatalf("command %q: %v", lines.Text(), err)
		}
		result, err := k.run(c)
		if err != nil {
			emit(map[string]any{"id": c.ID, "error": err.Error()})
		} else {
			emit(map[string]any{"id": c.ID, "result": result})
		}
	}
	_ = server.Stop()
}
