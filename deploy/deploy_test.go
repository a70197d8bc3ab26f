// Package deploy_test checks the deployment files, which no test here can
// run for real (no Docker, no Kubernetes, no Envoy): every YAML document
// parses, the pieces agree with each other (ports, names, labels, paths),
// the security settings stay on, and the binary accepts the Deployment's
// arguments and config.
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"

	"github.com/toolgate/toolgate/app"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Just enough of the Kubernetes and Envoy schemas for the checks below;
// the YAML decoder ignores every other field.

type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec yaml.Node         `yaml:"spec"`
	// Kustomization
	Resources []string `yaml:"resources"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type deploymentSpec struct {
	Selector labelSelector `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec podSpec `yaml:"spec"`
	} `yaml:"template"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    int64 `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	InitContainers []container `yaml:"initContainers"`
	Containers     []container `yaml:"containers"`
	Volumes        []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
		EmptyDir              *struct{} `yaml:"emptyDir"`
		PersistentVolumeClaim *struct{} `yaml:"persistentVolumeClaim"`
	} `yaml:"volumes"`
}

type container struct {
	Name          string   `yaml:"name"`
	Image         string   `yaml:"image"`
	RestartPolicy string   `yaml:"restartPolicy"`
	WorkingDir    string   `yaml:"workingDir"`
	Args          []string `yaml:"args"`
	Ports         []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
		RunAsUser                *int64 `yaml:"runAsUser"`
		AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
		Privileged               *bool  `yaml:"privileged"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	GRPC *struct {
		Port    int    `yaml:"port"`
		Service string `yaml:"service"`
	} `yaml:"grpc"`
	HTTPGet *struct {
		Path   string `yaml:"path"`
		Port   string `yaml:"port"` // a container port's name or number
		Scheme string `yaml:"scheme"`
	} `yaml:"httpGet"`
}

type serviceSpec struct {
	Type      string            `yaml:"type"`
	ClusterIP string            `yaml:"clusterIP"`
	Selector  map[string]string `yaml:"selector"`
	Ports     []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
}

type hpaSpec struct {
	ScaleTargetRef struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Name       string `yaml:"name"`
	} `yaml:"scaleTargetRef"`
	MinReplicas int `yaml:"minReplicas"`
	MaxReplicas int `yaml:"maxReplicas"`
	Metrics     []struct {
		Resource struct {
			Name string `yaml:"name"`
		} `yaml:"resource"`
	} `yaml:"metrics"`
}

type pdbSpec struct {
	Selector labelSelector `yaml:"selector"`
}

// readDocs parses every document of a YAML file.
func readDocs(t *testing.T, path string) []yaml.Node {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs []yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		docs = append(docs, n)
	}
	return docs
}

func decode(t *testing.T, n *yaml.Node, v any) {
	t.Helper()
	if err := n.Decode(v); err != nil {
		t.Fatalf("line %d: %v", n.Line, err)
	}
}

func TestEveryYAMLDocumentParses(t *testing.T) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found only %v under deploy/", files)
	}
	for _, f := range files {
		docs := readDocs(t, f)
		if len(docs) == 0 {
			t.Errorf("%s: no YAML document", f)
		}
		for i, d := range docs {
			if len(d.Content) != 1 || d.Content[0].Kind != yaml.MappingNode {
				t.Errorf("%s: document %d is not a mapping", f, i+1)
			}
		}
	}
}

// manifests are the Kubernetes objects of a directory, by kind.
type manifests struct {
	byKind map[string][]object
	files  []string
}

// loadManifests loads the central deployment, deploy/kubernetes.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	return loadManifestsIn(t, "kubernetes")
}

func loadManifestsIn(t *testing.T, dir string) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := manifests{byKind: map[string][]object{}}
	for _, f := range files {
		m.files = append(m.files, filepath.Base(f))
		for _, d := range readDocs(t, f) {
			var o object
			decode(t, &d, &o)
			if o.Kind == "" || o.APIVersion == "" {
				t.Fatalf("%s: document at line %d has no kind or apiVersion", f, d.Line)
			}
			m.byKind[o.Kind] = append(m.byKind[o.Kind], o)
		}
	}
	return m
}

func (m manifests) one(t *testing.T, kind string) object {
	t.Helper()
	if n := len(m.byKind[kind]); n != 1 {
		t.Fatalf("want one %s, found %d", kind, n)
	}
	return m.byKind[kind][0]
}

func (m manifests) deployment(t *testing.T) (object, deploymentSpec, container) {
	t.Helper()
	o := m.one(t, "Deployment")
	var spec deploymentSpec
	decode(t, &o.Spec, &spec)
	if n := len(spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("want one container, found %d", n)
	}
	return o, spec, spec.Template.Spec.Containers[0]
}

// flagValue returns the value of --name in args ("--name v" or "--name=v").
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	t.Fatalf("args %q have no %s", args, name)
	return ""
}

func port(t *testing.T, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func containerPort(t *testing.T, c container, name string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container has no port named %q", name)
	return 0
}

// isSubset reports whether every label of sel is in labels.
func isSubset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false // an empty selector would select every pod
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// configFile writes the ConfigMap entry that the Deployment's --config
// names to dir, checking on the way that the volume and mount line up, and
// returns its path.
func configFile(t *testing.T, m manifests, dir string) string {
	t.Helper()
	_, spec, c := m.deployment(t)
	cfgPath := flagValue(t, c.Args, "--config")
	cm := m.one(t, "ConfigMap")
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, cfgPath)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if vm.SubPath != "" {
			t.Errorf("mount %s uses subPath: ConfigMap updates would never reach the pod, and the server would not reload", vm.MountPath)
		}
		if !vm.ReadOnly {
			t.Errorf("mount %s is not readOnly", vm.MountPath)
		}
		for _, v := range spec.Template.Spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			if v.ConfigMap == nil || v.ConfigMap.Name != cm.Metadata.Name {
				t.Fatalf("volume %s is not the ConfigMap %s", v.Name, cm.Metadata.Name)
			}
			text, ok := cm.Data[rel]
			if !ok {
				t.Fatalf("ConfigMap %s has no key %q for --config %s", cm.Metadata.Name, rel, cfgPath)
			}
			p := filepath.Join(dir, rel)
			if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		t.Fatalf("mount %s has no volume", vm.MountPath)
	}
	t.Fatalf("--config %s is not under any volume mount", cfgPath)
	return ""
}

func TestKubernetesDeployment(t *testing.T) {
	m := loadManifests(t)
	dep, spec, c := m.deployment(t)
	pod := spec.Template.Spec

	if !isSubset(spec.Selector.MatchLabels, spec.Template.Metadata.Labels) {
		t.Errorf("selector %v does not select the pod template's labels %v", spec.Selector.MatchLabels, spec.Template.Metadata.Labels)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("args %q do not start with serve", c.Args)
	}
	listen := flagValue(t, c.Args, "--listen")
	if host, _, _ := net.SplitHostPort(listen); host != "0.0.0.0" {
		t.Errorf("--listen %s: pods must listen on all interfaces to be reachable", listen)
	}
	grpcPort := port(t, listen)
	if p := containerPort(t, c, "grpc"); p != grpcPort {
		t.Errorf("containerPort grpc %d, --listen port %d", p, grpcPort)
	}
	if p, mp := containerPort(t, c, "metrics"), port(t, flagValue(t, c.Args, "--metrics-listen")); p != mp {
		t.Errorf("containerPort metrics %d, --metrics-listen port %d", p, mp)
	}
	// The gRPC port serves TLS, which the kubelet's gRPC probes cannot
	// speak: the probes are HTTP, on the metrics listener (what the
	// running binary answers there: TestCentreServesTheSidecar).
	for name, pr := range map[string]*probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		switch {
		case pr == nil || pr.HTTPGet == nil:
			t.Errorf("%s is not an httpGet probe", name)
		case pr.HTTPGet.Scheme != "" && pr.HTTPGet.Scheme != "HTTP":
			t.Errorf("%s scheme %s: the metrics listener serves plain HTTP", name, pr.HTTPGet.Scheme)
		case probePort(t, c, pr) != port(t, flagValue(t, c.Args, "--metrics-listen")):
			t.Errorf("%s probes port %s, the metrics listener is %s", name, pr.HTTPGet.Port, flagValue(t, c.Args, "--metrics-listen"))
		}
	}
	if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Path != "/readyz" {
		t.Errorf("readinessProbe path %s, want /readyz (503 while starting and draining)", p.HTTPGet.Path)
	}
	if p := c.LivenessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Path != "/healthz" {
		t.Errorf("livenessProbe path %s, want /healthz (a draining pod is alive)", p.HTTPGet.Path)
	}

	// Security settings.
	if !(isTrue(pod.SecurityContext.RunAsNonRoot) || isTrue(c.SecurityContext.RunAsNonRoot)) {
		t.Error("runAsNonRoot is not true")
	}
	if pod.SecurityContext.RunAsUser == 0 {
		t.Error("runAsUser is unset or root; distroless nonroot is 65532")
	}
	sc := c.SecurityContext
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if isTrue(sc.Privileged) {
		t.Error("container is privileged")
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("capabilities.drop %v does not drop ALL", sc.Capabilities.Drop)
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" {
			t.Errorf("no %s request", r)
		}
		if c.Resources.Limits[r] == "" {
			t.Errorf("no %s limit", r)
		}
	}

	// The config the pod runs with, and what it needs from the pod.
	cfg, err := app.LoadConfig(configFile(t, m, t.TempDir()))
	if err != nil {
		t.Fatalf("ConfigMap config: %v", err)
	}
	preStop := 0
	if c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = c.Lifecycle.PreStop.Sleep.Seconds
	}
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	if need := time.Duration(preStop)*time.Second + cfg.Server.ShutdownTimeout; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %s is not longer than the preStop sleep (%ds) plus the server's shutdown_timeout (%s)",
			grace, preStop, cfg.Server.ShutdownTimeout)
	}
	for _, b := range cfg.Classifier.Backends {
		found := false
		for _, e := range c.Env {
			if e.Name == b.APIKeyEnv {
				found = true
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					t.Errorf("env %s (backend %s's key) does not come from a Secret", e.Name, b.Name)
				}
			}
		}
		if !found {
			t.Errorf("backend %s reads its key from %s, which the container does not set", b.Name, b.APIKeyEnv)
		}
	}

	// The other objects point at this Deployment and its pods.
	labels := spec.Template.Metadata.Labels
	headless := 0
	for _, svc := range m.byKind["Service"] {
		var s serviceSpec
		decode(t, &svc.Spec, &s)
		if !isSubset(s.Selector, labels) {
			t.Errorf("Service %s selects %v, not the pods %v", svc.Metadata.Name, s.Selector, labels)
		}
		if s.ClusterIP == "None" {
			headless++
		}
		for _, p := range s.Ports {
			containerPort(t, c, p.TargetPort) // fails on a target port the container lacks
			if p.Name == "grpc" && p.Port != grpcPort {
				t.Errorf("Service %s grpc port %d, the server's %d (clients and Envoy dial it)", svc.Metadata.Name, p.Port, grpcPort)
			}
		}
	}
	if headless != 1 || len(m.byKind["Service"]) != 2 {
		t.Errorf("want a ClusterIP and a headless Service, found %d Services, %d headless", len(m.byKind["Service"]), headless)
	}
	hpaObj := m.one(t, "HorizontalPodAutoscaler")
	var hpa hpaSpec
	decode(t, &hpaObj.Spec, &hpa)
	if hpaObj.APIVersion != "autoscaling/v2" {
		t.Errorf("HorizontalPodAutoscaler apiVersion %s, want autoscaling/v2", hpaObj.APIVersion)
	}
	if r := hpa.ScaleTargetRef; r.Kind != "Deployment" || r.Name != dep.Metadata.Name {
		t.Errorf("HorizontalPodAutoscaler scales %s %s, not the Deployment %s", r.Kind, r.Name, dep.Metadata.Name)
	}
	if hpa.MinReplicas < 2 || hpa.MaxReplicas < hpa.MinReplicas {
		t.Errorf("HorizontalPodAutoscaler replicas %d..%d: want at least 2 for a rolling restart", hpa.MinReplicas, hpa.MaxReplicas)
	}
	if len(hpa.Metrics) == 0 || hpa.Metrics[0].Resource.Name != "cpu" {
		t.Error("HorizontalPodAutoscaler does not scale on cpu")
	}
	pdbObj := m.one(t, "PodDisruptionBudget")
	var pdb pdbSpec
	decode(t, &pdbObj.Spec, &pdb)
	if !isSubset(pdb.Selector.MatchLabels, labels) {
		t.Errorf("PodDisruptionBudget selects %v, not the pods %v", pdb.Selector.MatchLabels, labels)
	}

	// kubectl apply -k applies every manifest.
	k := m.one(t, "Kustomization")
	want := slices.DeleteFunc(slices.Clone(m.files), func(f string) bool { return f == "kustomization.yaml" })
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, files %v", got, want)
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// envoyTLS is a transport_socket: the TLS context of a listener's filter
// chain (DownstreamTlsContext) or a cluster (UpstreamTlsContext).
type envoyTLS struct {
	Name        string `yaml:"name"`
	TypedConfig struct {
		Type             string `yaml:"@type"`
		SNI              string `yaml:"sni"`
		CommonTLSContext struct {
			ALPNProtocols   []string `yaml:"alpn_protocols"`
			TLSCertificates []struct {
				CertificateChain struct {
					Filename string `yaml:"filename"`
				} `yaml:"certificate_chain"`
				PrivateKey struct {
					Filename string `yaml:"filename"`
				} `yaml:"private_key"`
			} `yaml:"tls_certificates"`
			ValidationContext struct {
				TrustedCA struct {
					Filename string `yaml:"filename"`
				} `yaml:"trusted_ca"`
				MatchTypedSubjectAltNames []struct {
					SANType string `yaml:"san_type"`
					Matcher struct {
						Exact string `yaml:"exact"`
					} `yaml:"matcher"`
				} `yaml:"match_typed_subject_alt_names"`
			} `yaml:"validation_context"`
		} `yaml:"common_tls_context"`
	} `yaml:"typed_config"`
}

type envoyConfig struct {
	StaticResources struct {
		Listeners []struct {
			FilterChains []struct {
				TransportSocket *envoyTLS `yaml:"transport_socket"`
				Filters         []struct {
					Name        string `yaml:"name"`
					TypedConfig struct {
						RouteConfig struct {
							VirtualHosts []struct {
								Routes []struct {
									Match struct {
										Path   string `yaml:"path"`
										Prefix string `yaml:"prefix"`
									} `yaml:"match"`
									Route struct {
										Cluster     string `yaml:"cluster"`
										Timeout     string `yaml:"timeout"`
										IdleTimeout string `yaml:"idle_timeout"`
									} `yaml:"route"`
								} `yaml:"routes"`
							} `yaml:"virtual_hosts"`
						} `yaml:"route_config"`
					} `yaml:"typed_config"`
				} `yaml:"filters"`
			} `yaml:"filter_chains"`
		} `yaml:"listeners"`
		Clusters []struct {
			Name                          string `yaml:"name"`
			Type                          string `yaml:"type"`
			LBPolicy                      string `yaml:"lb_policy"`
			TypedExtensionProtocolOptions map[string]struct {
				ExplicitHTTPConfig struct {
					HTTP2ProtocolOptions *map[string]any `yaml:"http2_protocol_options"`
				} `yaml:"explicit_http_config"`
			} `yaml:"typed_extension_protocol_options"`
			LoadAssignment struct {
				Endpoints []struct {
					LBEndpoints []struct {
						Endpoint struct {
							Address struct {
								SocketAddress struct {
									Address   string `yaml:"address"`
									PortValue int    `yaml:"port_value"`
								} `yaml:"socket_address"`
							} `yaml:"address"`
						} `yaml:"endpoint"`
					} `yaml:"lb_endpoints"`
				} `yaml:"endpoints"`
			} `yaml:"load_assignment"`
			TransportSocket *envoyTLS `yaml:"transport_socket"`
			HealthChecks    []struct {
				GRPCHealthCheck *struct {
					ServiceName string `yaml:"service_name"`
				} `yaml:"grpc_health_check"`
				TransportSocketMatchCriteria map[string]any `yaml:"transport_socket_match_criteria"`
			} `yaml:"health_checks"`
		} `yaml:"clusters"`
	} `yaml:"static_resources"`
}

func TestEnvoy(t *testing.T) {
	docs := readDocs(t, "envoy/envoy.yaml")
	if len(docs) != 1 {
		t.Fatalf("envoy.yaml has %d documents, want 1", len(docs))
	}
	var cfg envoyConfig
	decode(t, &docs[0], &cfg)

	m := loadManifests(t)
	_, _, c := m.deployment(t)
	grpcPort := containerPort(t, c, "grpc")
	var headless string
	for _, svc := range m.byKind["Service"] {
		var s serviceSpec
		decode(t, &svc.Spec, &s)
		if s.ClusterIP == "None" {
			headless = svc.Metadata.Name
		}
	}

	clusters := map[string]bool{}
	for _, cl := range cfg.StaticResources.Clusters {
		clusters[cl.Name] = true
		if cl.Type != "STRICT_DNS" {
			t.Errorf("cluster %s type %s: want STRICT_DNS, so that every pod behind the headless Service is a host", cl.Name, cl.Type)
		}
		if cl.LBPolicy != "ROUND_ROBIN" && cl.LBPolicy != "LEAST_REQUEST" {
			t.Errorf("cluster %s lb_policy %q", cl.Name, cl.LBPolicy)
		}
		opts, ok := cl.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
		if !ok || opts.ExplicitHTTPConfig.HTTP2ProtocolOptions == nil {
			t.Errorf("cluster %s does not speak HTTP/2 upstream (explicit_http_config.http2_protocol_options); gRPC needs it", cl.Name)
		}
		hosts := 0
		for _, e := range cl.LoadAssignment.Endpoints {
			for _, lb := range e.LBEndpoints {
				sa := lb.Endpoint.Address.SocketAddress
				hosts++
				if !strings.HasPrefix(sa.Address, headless+".") {
					t.Errorf("cluster %s resolves %s, not the headless Service %s", cl.Name, sa.Address, headless)
				}
				if sa.PortValue != grpcPort {
					t.Errorf("cluster %s dials port %d, the server serves on %d", cl.Name, sa.PortValue, grpcPort)
				}
			}
		}
		if hosts == 0 {
			t.Errorf("cluster %s has no endpoint", cl.Name)
		}
		// The pods serve TLS only: the cluster speaks TLS to them, verifies
		// them against their CA for a name their certificate has, and
		// offers h2 by ALPN (gRPC servers refuse a connection without it).
		// Its health checks go over the same TLS (no other transport
		// socket picked), where gRPC health needs no token.
		tlsCtx := cl.TransportSocket
		if tlsCtx == nil || !strings.HasSuffix(tlsCtx.TypedConfig.Type, ".UpstreamTlsContext") {
			t.Errorf("cluster %s has no UpstreamTlsContext transport_socket: the pods serve TLS only", cl.Name)
		} else {
			ctx := tlsCtx.TypedConfig.CommonTLSContext
			if ctx.ValidationContext.TrustedCA.Filename == "" {
				t.Errorf("cluster %s does not verify the pods (validation_context.trusted_ca)", cl.Name)
			}
			if !slices.Contains(ctx.ALPNProtocols, "h2") {
				t.Errorf("cluster %s offers ALPN %q, want h2", cl.Name, ctx.ALPNProtocols)
			}
			var names []string
			for _, m := range ctx.ValidationContext.MatchTypedSubjectAltNames {
				if m.SANType == "DNS" {
					names = append(names, m.Matcher.Exact)
				}
			}
			if len(names) == 0 {
				t.Errorf("cluster %s checks no DNS name of the pods' certificate (match_typed_subject_alt_names): any certificate of the CA would do", cl.Name)
			}
			for _, n := range append(names, tlsCtx.TypedConfig.SNI) {
				if !slices.Contains(documentedSANs(t), n) {
					t.Errorf("cluster %s expects the name %q, which is not among the certificate's documented dnsNames", cl.Name, n)
				}
			}
		}
		grpcHC := false
		for _, hc := range cl.HealthChecks {
			grpcHC = grpcHC || hc.GRPCHealthCheck != nil
			if hc.TransportSocketMatchCriteria != nil {
				t.Errorf("cluster %s health checks pick another transport socket; the pods serve only TLS", cl.Name)
			}
		}
		if !grpcHC {
			t.Errorf("cluster %s has no grpc_health_check", cl.Name)
		}
	}
	// Clients send tokens through Envoy: its listeners serve TLS.
	for _, l := range cfg.StaticResources.Listeners {
		for _, fc := range l.FilterChains {
			ts := fc.TransportSocket
			if ts == nil || !strings.HasSuffix(ts.TypedConfig.Type, ".DownstreamTlsContext") ||
				len(ts.TypedConfig.CommonTLSContext.TLSCertificates) == 0 || !slices.Contains(ts.TypedConfig.CommonTLSContext.ALPNProtocols, "h2") {
				t.Error("a listener's filter chain does not serve TLS with a certificate and ALPN h2: clients' tokens would cross the network in plaintext")
			}
		}
	}

	// Every streaming method (an agent's session, a local server's policy
	// watch) needs a route of its own: Envoy's default route timeout,
	// 15s, would cut each stream. Its idle limit must outlast the
	// centre's resend of the policy set to a quiet watch (a minute).
	streams := map[string]bool{}
	for _, sd := range []grpc.ServiceDesc{pb.PermissionService_ServiceDesc, pb.UpstreamService_ServiceDesc} {
		for _, st := range sd.Streams {
			streams["/"+sd.ServiceName+"/"+st.StreamName] = false
		}
	}
	for _, l := range cfg.StaticResources.Listeners {
		for _, fc := range l.FilterChains {
			for _, f := range fc.Filters {
				for _, vh := range f.TypedConfig.RouteConfig.VirtualHosts {
					for _, r := range vh.Routes {
						if !clusters[r.Route.Cluster] {
							t.Errorf("route %s%s goes to unknown cluster %q", r.Match.Path, r.Match.Prefix, r.Route.Cluster)
						}
						if _, ok := streams[r.Match.Path]; ok {
							streams[r.Match.Path] = true
							if r.Route.Timeout != "0s" {
								t.Errorf("%s route timeout %q: streams last as long as a session or a watch, want 0s (none)", r.Match.Path, r.Route.Timeout)
							}
							if idle, err := time.ParseDuration(r.Route.IdleTimeout); err != nil || idle < 2*time.Minute {
								t.Errorf("%s route idle_timeout %q: want at least 2m", r.Match.Path, r.Route.IdleTimeout)
							}
						}
					}
				}
			}
		}
	}
	for path, routed := range streams {
		if !routed {
			t.Errorf("no route for %s; Envoy's default 15s route timeout would cut every stream", path)
		}
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string // FROM lines
	var user, expose, cmd string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			stages = append(stages, rest)
			user, expose, cmd = "", "", "" // only the final stage counts
		case "USER":
			user = rest
		case "EXPOSE":
			expose = rest
		case "CMD":
			cmd = rest
		}
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, found FROM %q", stages)
	}
	if final := stages[len(stages)-1]; !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s: want a distroless static base", final)
	}
	if u, _, _ := strings.Cut(user, ":"); u != "nonroot" && u != "65532" {
		t.Errorf("final stage USER %q, want nonroot", user)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the build does not use %s", want)
		}
	}

	// The image exposes what the Deployment and the image's own command use.
	_, _, c := loadManifests(t).deployment(t)
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, strconv.Itoa(p.ContainerPort))
	}
	if got := strings.Fields(expose); !slices.Equal(got, ports) {
		t.Errorf("EXPOSE %v, the Deployment's ports %v", got, ports)
	}
	var args []string
	if err := yaml.Unmarshal([]byte(cmd), &args); err != nil {
		t.Fatalf("CMD %s is not a JSON array: %v", cmd, err)
	}
	if p := strconv.Itoa(port(t, flagValue(t, args, "--listen"))); p != ports[0] {
		t.Errorf("CMD --listen port %s, EXPOSE %v", p, ports)
	}
}

// TestDeploymentArgsStartTheServer runs the binary the way the pod does:
// the Deployment's arguments, the ConfigMap's config file, and the env
// variables the config needs, with the listen addresses moved to free
// loopback ports. A renamed flag or a config the server refuses would
// otherwise only show as a crash loop in a cluster.
func TestDeploymentArgsStartTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the toolgate binary")
	}
	bin := toolgateBinary(t)
	ctr := newTestCentre(t, "", true)
	serveUntilReady(t, bin, ctr.args, ctr.env, nil)
}

// serveUntilReady runs toolgate with args and the extra env until it logs
// "serving", runs after (when not nil), then stops it with SIGTERM and
// expects a clean exit.
func serveUntilReady(t *testing.T, bin string, args, env []string, after func()) {
	t.Helper()
	// The timeout only keeps a server that neither serves nor exits from
	// hanging the test; killing the process ends the scan below.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cmd.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = pw.Close()
		waited <- err
	}()

	// "serving" comes once every listener is bound, the Unix socket too.
	var lines []string
	serving := false
	sc := bufio.NewScanner(pr)
	for !serving && sc.Scan() {
		lines = append(lines, sc.Text())
		serving = strings.Contains(sc.Text(), `"msg":"serving"`)
	}
	if !serving {
		err := <-waited
		t.Fatalf("toolgate %q did not serve (%v):\n%s\n%s", args, err, strings.Join(lines, "\n"), stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if after != nil {
		after()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("toolgate did not stop cleanly on SIGTERM: %v\n%s", err, stderr.String())
	}
}
