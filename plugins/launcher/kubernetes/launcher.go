// Package kubernetes launches the sharding items of ElasticJob-Cloud jobs on
// Kubernetes: one fire of a TRANSIENT job is one Indexed Job whose
// completion index is the sharding item, each pod with the item's CPU and
// memory as requests and limits and the item's ShardingContext JSON as the
// last argument of the app's bootstrap command, exactly as SCRIPT jobs get
// it. Results are read from the Job's status (completedIndexes,
// failedIndexes) and its pods: an item is ready (Pending for lack of room,
// with the scheduler's reason), running, lost (its node is gone), succeeded
// or failed.
//
// This package is its own Go module so that client-go stays out of the
// core module's dependencies. docs/cloud.md describes the mapping.
package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
	"github.com/hashicorp/go-hclog"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// Labels and annotations on everything the launcher creates. Label values
// are the names made safe for a label (see labelValue); the annotations
// hold the exact names.
const (
	LabelManaged   = "ejob.io/managed-by"
	LabelApp       = "ejob.io/app"
	LabelJob       = "ejob.io/job"
	LabelFire      = "ejob.io/fire"
	AnnotationApp  = "ejob.io/app-name"
	AnnotationJob  = "ejob.io/job-name"
	AnnotationFire = "ejob.io/fire-id"
	managedValue   = "ejob"
	// indexAnnotation is the Job controller's completion index of a pod,
	// podIndexLabel the StatefulSet controller's ordinal.
	indexAnnotation = "batch.kubernetes.io/job-completion-index"
	podIndexLabel   = "apps.kubernetes.io/pod-index"
	// appMount is where an appURL app is fetched to inside the pod,
	// cacheMount where the fetch container sees the node's cache of it.
	appMount   = "/ejob/app"
	cacheMount = "/ejob/cache"
)

// DefaultHelperImage runs the fetch of an appURL app and, for such apps,
// the bootstrap script itself; it needs sh and wget or curl.
const DefaultHelperImage = "busybox:1.37"

// DefaultAppCacheDir is the directory on each node under which apps with
// CacheEnable keep what their appURL fetched (a hostPath volume).
const DefaultAppCacheDir = "/var/cache/ejob/apps"

// Errors callers branch on.
var (
	// ErrInvalidFire: the fire cannot be launched as given.
	ErrInvalidFire = errors.New("invalid fire")
	// ErrNotFound: no such fire runs (or it has already been deleted).
	ErrNotFound = errors.New("fire not found")
)

// Config connects a Launcher to a cluster.
type Config struct {
	// Kubeconfig is a kubeconfig path; empty means in-cluster.
	Kubeconfig string
	// Context is the kubeconfig context; empty means its current one.
	Context string
	// Namespace holds everything launched; empty means the context's
	// namespace, or "default".
	Namespace string
	// HelperImage is the image of the fetch init container and of appURL
	// apps' main container (DefaultHelperImage when empty).
	HelperImage string
	// AppCacheDir is the node directory of the app cache
	// (DefaultAppCacheDir when empty); an absolute path.
	AppCacheDir string
	Logger      hclog.Logger
}

// Launcher creates, watches and deletes the Kubernetes objects of fires.
type Launcher struct {
	client      clientset.Interface
	namespace   string
	helperImage string
	cacheDir    string
	log         hclog.Logger
	fires       fireReports
}

// New connects to the cluster of cfg.
func New(cfg Config) (*Launcher, error) {
	var rc *rest.Config
	namespace := cfg.Namespace
	var err error
	if cfg.Kubeconfig == "" {
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("kubernetes: in-cluster config (no kubeconfig given): %w", err)
		}
	} else {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
		if rc, err = loader.ClientConfig(); err != nil {
			return nil, fmt.Errorf("kubernetes: kubeconfig %s (context %q): %w", cfg.Kubeconfig, cfg.Context, err)
		}
		if namespace == "" {
			if namespace, _, err = loader.Namespace(); err != nil {
				return nil, fmt.Errorf("kubernetes: namespace of kubeconfig %s: %w", cfg.Kubeconfig, err)
			}
		}
	}
	client, err := clientset.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: client: %w", err)
	}
	cfg.Namespace = namespace
	return NewWithClient(client, cfg)
}

// NewWithClient is New with a client already made (cfg's Kubeconfig and
// Context are not used).
func NewWithClient(client clientset.Interface, cfg Config) (*Launcher, error) {
	l := &Launcher{client: client, namespace: cfg.Namespace, helperImage: cfg.HelperImage, cacheDir: cfg.AppCacheDir, log: cfg.Logger}
	if l.namespace == "" {
		l.namespace = corev1.NamespaceDefault
	}
	if l.helperImage == "" {
		l.helperImage = DefaultHelperImage
	}
	if l.cacheDir == "" {
		l.cacheDir = DefaultAppCacheDir
	}
	if !path.IsAbs(l.cacheDir) || path.Clean(l.cacheDir) == "/" {
		return nil, fmt.Errorf("kubernetes: app cache directory %q must be an absolute path below /", cfg.AppCacheDir)
	}
	l.cacheDir = path.Clean(l.cacheDir)
	if l.log == nil {
		l.log = hclog.NewNullLogger()
	}
	return l, nil
}

// App is where a job's code comes from and how it starts.
type App struct {
	Name string
	// Image is a container image holding the app; when empty, AppURL is
	// fetched (a tar.gz, .tgz, .tar or .zip is unpacked; any other file is
	// made executable) into the pod's app directory, the working directory
	// of BootstrapScript.
	Image  string
	AppURL string
	// BootstrapScript is the shell command that runs an item; the item's
	// ShardingContext JSON is appended as its last argument.
	BootstrapScript string
	// CacheEnable keeps what AppURL fetched on each node, in the
	// launcher's AppCacheDir keyed by the app's name and a hash of its
	// AppURL, and copies it from there in later runs on that node instead
	// of fetching it again; false fetches it for every pod. For an Image
	// app it is the pull policy: IfNotPresent, or Always when false.
	CacheEnable bool
	// CPUCount and MemoryMB are the app's own share, added to each item's.
	CPUCount float64
	MemoryMB float64
}

// Fire is one fire of a TRANSIENT job: the items to run now.
type Fire struct {
	App     App
	JobName string
	// FireID tells this fire from the job's others (unique per job).
	FireID             string
	ShardingTotalCount int
	JobParameter       string
	// ShardingItemParameters holds the parameter of each item that has one.
	ShardingItemParameters map[int]string
	// Items are the sharding items to run; empty means all of
	// 0..ShardingTotalCount-1. A failover fire lists the items to re-run.
	Items []int
	// Failover marks a fire that re-runs items (the task id says FAILOVER).
	Failover bool
	// Labels are added to the Job and its pods (the launcher's own
	// ejob.io labels win).
	Labels map[string]string
	// ItemEnv is each item's own environment, set verbatim in its
	// process. EJOB_SHARDING_CONTEXT and EJOB_SHARDING_ITEM are set by the
	// launcher when ItemEnv does not set them. Names must be shell
	// identifiers.
	ItemEnv map[int]map[string]string
	// CPUCount and MemoryMB are each item's resources.
	CPUCount float64
	MemoryMB float64
	// RetriesPerItem is the Job's backoffLimitPerIndex: how often a failed
	// or lost item's pod is replaced before the item counts as failed.
	RetriesPerItem int32
	// TTLAfterFinished is how long a finished Job is kept (0: an hour).
	TTLAfterFinished time.Duration
	// LostAfter is how long a pod may stay on a node that is not ready
	// before it is evicted and replaced (its tolerationSeconds; 0: 30 s).
	LostAfter time.Duration
}

// items returns the fire's items, checked.
func (f Fire) items() ([]int, error) {
	if f.ShardingTotalCount <= 0 {
		return nil, fmt.Errorf("%w: job %q: shardingTotalCount %d must be > 0", ErrInvalidFire, f.JobName, f.ShardingTotalCount)
	}
	if len(f.Items) == 0 {
		all := make([]int, f.ShardingTotalCount)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	seen := map[int]bool{}
	for _, it := range f.Items {
		if it < 0 || it >= f.ShardingTotalCount || seen[it] {
			return nil, fmt.Errorf("%w: job %q: item %d is out of 0..%d or repeated", ErrInvalidFire, f.JobName, it, f.ShardingTotalCount-1)
		}
		seen[it] = true
	}
	return append([]int(nil), f.Items...), nil
}

func (f Fire) check() error {
	switch {
	case f.JobName == "":
		return fmt.Errorf("%w: job name is empty", ErrInvalidFire)
	case f.FireID == "":
		return fmt.Errorf("%w: job %q: fire id is empty", ErrInvalidFire, f.JobName)
	case f.App.Image == "" && f.App.AppURL == "":
		return fmt.Errorf("%w: job %q: app %q has neither image nor appURL", ErrInvalidFire, f.JobName, f.App.Name)
	case strings.TrimSpace(f.App.BootstrapScript) == "":
		return fmt.Errorf("%w: job %q: app %q has no bootstrapScript", ErrInvalidFire, f.JobName, f.App.Name)
	case f.CPUCount < 0 || f.MemoryMB < 0 || f.App.CPUCount < 0 || f.App.MemoryMB < 0:
		return fmt.Errorf("%w: job %q: negative cpuCount or memoryMB", ErrInvalidFire, f.JobName)
	case f.RetriesPerItem < 0:
		return fmt.Errorf("%w: job %q: retries per item %d < 0", ErrInvalidFire, f.JobName, f.RetriesPerItem)
	}
	if _, err := f.items(); err != nil {
		return err
	}
	for item, env := range f.ItemEnv {
		for k := range env {
			if !shellName.MatchString(k) {
				return fmt.Errorf("%w: job %q item %d: environment name %q is not a shell identifier", ErrInvalidFire, f.JobName, item, k)
			}
		}
	}
	return nil
}

// ObjectName is the name of the Kubernetes Job of a fire: readable, at
// most 52 characters (so that pod names fit), unique by a hash of the job
// name and fire id.
func ObjectName(jobName, fireID string) string {
	sum := sha256.Sum256([]byte(jobName + "\x00" + fireID))
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(jobName), "-"), "-")
	if len(base) > 30 {
		base = strings.TrimRight(base[:30], "-")
	}
	if base == "" {
		base = "job"
	}
	return "ejob-" + base + "-" + hex.EncodeToString(sum[:])[:12]
}

var (
	nonName   = regexp.MustCompile(`[^a-z0-9-]+`)
	nonLabel  = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// labelValue makes s a valid label value: disallowed characters become
// '_', at most 63 characters, alphanumeric at both ends. The exact name
// is in an annotation; selecting by label narrows, the annotation decides.
func labelValue(s string) string {
	v := nonLabel.ReplaceAllString(s, "_")
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, "._-")
}

// Launch creates the Indexed Job of f and returns its name. Launching a
// fire the cluster holds again changes nothing.
func (l *Launcher) Launch(ctx context.Context, f Fire) (string, error) {
	if err := f.check(); err != nil {
		return "", err
	}
	job, err := l.jobFor(f)
	if err != nil {
		return "", err
	}
	created, err := l.client.BatchV1().Jobs(l.namespace).Create(ctx, job, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return job.Name, nil
	}
	if err != nil {
		return "", fmt.Errorf("kubernetes: launch job %q fire %q: %w", f.JobName, f.FireID, err)
	}
	l.log.Info("fire launched", "job", f.JobName, "fire", f.FireID, "k8s_job", created.Name, "items", *created.Spec.Completions)
	return created.Name, nil
}

func (l *Launcher) jobFor(f Fire) (*batchv1.Job, error) {
	items, _ := f.items()
	name := ObjectName(f.JobName, f.FireID)
	tmpl := l.podTemplate(f, items, name, corev1.RestartPolicyNever)
	ttl := f.TTLAfterFinished
	if ttl <= 0 {
		ttl = time.Hour
	}
	n := int32(len(items))
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec: batchv1.JobSpec{
			CompletionMode:          ptr.To(batchv1.IndexedCompletion),
			Completions:             &n,
			Parallelism:             &n,
			BackoffLimitPerIndex:    ptr.To(f.RetriesPerItem),
			TTLSecondsAfterFinished: ptr.To(int32(ttl / time.Second)),
			Template:                tmpl,
		},
	}, nil
}

// podTemplate is the pod of f's items: index i of the Job or StatefulSet
// runs items[i].
func (l *Launcher) podTemplate(f Fire, items []int, name string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	lbl := maps.Clone(f.Labels)
	if lbl == nil {
		lbl = map[string]string{}
	}
	maps.Copy(lbl, map[string]string{
		LabelManaged: managedValue, LabelApp: labelValue(f.App.Name), LabelJob: labelValue(f.JobName), LabelFire: name,
	})
	ann := map[string]string{AnnotationApp: f.App.Name, AnnotationJob: f.JobName, AnnotationFire: f.FireID}
	env := []corev1.EnvVar{
		{Name: "EJOB_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "EJOB_BOOTSTRAP_SCRIPT", Value: escapeRefs(f.App.BootstrapScript)},
	}
	if restart != corev1.RestartPolicyNever {
		env = append(env, corev1.EnvVar{Name: "EJOB_POD_INDEX", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + podIndexLabel + "']"}}})
	}
	for idx, item := range items {
		x := strconv.Itoa(idx)
		own := map[string]string{"EJOB_SHARDING_ITEM": strconv.Itoa(item), "EJOB_SHARDING_CONTEXT": ""}
		maps.Copy(own, f.ItemEnv[item])
		names := slices.Sorted(maps.Keys(own))
		env = append(env,
			corev1.EnvVar{Name: "EJOB_SHARDING_ITEM_" + x, Value: strconv.Itoa(item)},
			corev1.EnvVar{Name: "EJOB_ITEM_ENV_" + x, Value: strings.Join(names, " ")})
		for _, k := range names {
			v := own[k]
			if _, given := f.ItemEnv[item][k]; !given && k == "EJOB_SHARDING_CONTEXT" {
				v = defaultContext(f, item)
			}
			v = strings.ReplaceAll(escapeRefs(v), spi.LaunchNodePlaceholder, "$(EJOB_NODE_NAME)")
			env = append(env, corev1.EnvVar{Name: "EJOB_ITEM_" + x + "_" + k, Value: v})
		}
	}
	res := corev1.ResourceList{}
	if cpu := f.CPUCount + f.App.CPUCount; cpu > 0 {
		res[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(math.Ceil(cpu*1000)), resource.DecimalSI)
	}
	if mem := f.MemoryMB + f.App.MemoryMB; mem > 0 {
		res[corev1.ResourceMemory] = *resource.NewQuantity(int64(math.Ceil(mem*1024*1024)), resource.BinarySI)
	}
	main := corev1.Container{
		Name: "item", Image: f.App.Image, Command: []string{"sh", "-c", runScript, "ejob-item"}, Env: env,
		Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
	}
	if f.App.Image != "" {
		// An image app's cache is the node's image cache.
		main.ImagePullPolicy = corev1.PullAlways
		if f.App.CacheEnable {
			main.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	pod := corev1.PodSpec{
		RestartPolicy:                 restart,
		Containers:                    []corev1.Container{main},
		EnableServiceLinks:            ptr.To(false),
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To(int64(10)),
		Tolerations:                   lostTolerations(f.LostAfter),
	}
	if f.App.Image == "" {
		vol := corev1.VolumeMount{Name: "app", MountPath: appMount}
		pod.Volumes = []corev1.Volume{{Name: "app", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		fetch := corev1.Container{
			Name: "fetch", Image: l.helperImage, Command: []string{"sh", "-c", fetchScript, "ejob-fetch"},
			Env: []corev1.EnvVar{
				{Name: "EJOB_APP_URL", Value: escapeRefs(f.App.AppURL)}, {Name: "EJOB_APP_DIR", Value: appMount},
			},
			VolumeMounts: []corev1.VolumeMount{vol},
		}
		if f.App.CacheEnable {
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "app-cache", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: l.appCachePath(f.App), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}})
			fetch.Env = append(fetch.Env, corev1.EnvVar{Name: "EJOB_APP_CACHE", Value: cacheMount})
			fetch.VolumeMounts = append(fetch.VolumeMounts, corev1.VolumeMount{Name: "app-cache", MountPath: cacheMount})
		}
		pod.InitContainers = []corev1.Container{fetch}
		main.Image = l.helperImage
		main.WorkingDir = appMount
		main.VolumeMounts = []corev1.VolumeMount{vol}
		pod.Containers[0] = main
	}
	if restart == corev1.RestartPolicyAlways {
		addFiresContainer(&pod, l.helperImage)
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl, Annotations: ann}, Spec: pod}
}

// addFiresContainer gives a DAEMON pod its fire log (EJOB_FIRE_LOG in the
// item container, on an emptyDir volume) and the fires container that
// reports it.
func addFiresContainer(pod *corev1.PodSpec, image string) {
	mount := corev1.VolumeMount{Name: firesVolume, MountPath: firesMount}
	env := corev1.EnvVar{Name: "EJOB_FIRE_LOG", Value: fireLogPath}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: firesVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	item := &pod.Containers[0]
	item.Env = append(item.Env, env)
	item.VolumeMounts = append(item.VolumeMounts, mount)
	pod.Containers = append(pod.Containers, corev1.Container{
		Name: firesContainer, Image: image, Command: []string{"sh", "-c", firesScript, "ejob-fires"},
		Env: []corev1.EnvVar{env}, VolumeMounts: []corev1.VolumeMount{mount},
	})
}

// lostTolerations keep a pod on a node that is not ready or unreachable
// for after (30 s when 0), instead of the cluster's default of 300 s.
func lostTolerations(after time.Duration) []corev1.Toleration {
	if after <= 0 {
		after = 30 * time.Second
	}
	secs := int64(math.Ceil(after.Seconds()))
	var out []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(secs)})
	}
	return out
}

// appCachePath is the node directory that caches app's fetch: named by
// the app (made safe for a path) and a hash of its AppURL, so a changed
// AppURL is fetched afresh.
func (l *Launcher) appCachePath(app App) string {
	sum := sha256.Sum256([]byte(app.AppURL))
	name := labelValue(app.Name)
	if name == "" {
		name = "app"
	}
	return path.Join(l.cacheDir, name+"-"+hex.EncodeToString(sum[:])[:16])
}

// defaultContext is the ShardingContext JSON of item when the fire's
// ItemEnv gives none: the task id is upstream Cloud's
// {job}@-@{item}@-@{READY|FAILOVER}@-@{node}@-@{fire}, the node filled in
// when the pod starts.
func defaultContext(f Fire, item int) string {
	kind := "READY"
	if f.Failover {
		kind = "FAILOVER"
	}
	sc := spi.ShardingContext{
		JobName:            f.JobName,
		TaskID:             fmt.Sprintf("%s@-@%d@-@%s@-@%s@-@%s", f.JobName, item, kind, spi.LaunchNodePlaceholder, f.FireID),
		ShardingTotalCount: f.ShardingTotalCount,
		JobParameter:       f.JobParameter,
		ShardingItem:       item,
	}
	if p, ok := f.ShardingItemParameters[item]; ok {
		sc.ShardingParameter = &p
	}
	return string(gson.ShardingContext(sc))
}

// escapeRefs keeps the kubelet from expanding $(VAR) in s.
func escapeRefs(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// runScript is the item container's command: it exports the environment
// of the item of its completion index (a StatefulSet's: its ordinal), drops every item's copies, and
// runs the bootstrap script with the item's ShardingContext JSON as the
// last argument.
const runScript = `set -e
i=${JOB_COMPLETION_INDEX:-${EJOB_POD_INDEX:?no JOB_COMPLETION_INDEX or EJOB_POD_INDEX}}
eval "names=\${EJOB_ITEM_ENV_$i?no item for completion index $i}"
for k in $names; do eval "v=\${EJOB_ITEM_${i}_$k}"; eval "$k=\$v"; export "$k"; done
for k in $(env | sed -n 's/^\(EJOB_ITEM_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(EJOB_SHARDING_ITEM_[0-9]*\)=.*/\1/p'); do unset "$k"; done
unset names k v i
exec sh -c "$EJOB_BOOTSTRAP_SCRIPT \"\$@\"" ejob-app "$EJOB_SHARDING_CONTEXT"
`

// fetchScript is the fetch init container's command: it downloads
// EJOB_APP_URL into EJOB_APP_DIR and unpacks an archive or makes a single
// file executable. With EJOB_APP_CACHE (the node's cache directory of the
// app) it copies the app from the cache when a complete copy is there;
// otherwise, after the fetch, the one pod that creates the cache's app
// directory (mkdir is atomic) fills it and marks it complete. A cache that
// could not be filled is never marked complete: the pods on that node keep
// fetching, and the item runs either way.
const fetchScript = `set -e
mkdir -p "$EJOB_APP_DIR"
cd "$EJOB_APP_DIR"
c=${EJOB_APP_CACHE:-}
if [ -n "$c" ] && [ -f "$c/complete" ]; then cp -R "$c/app/." .; exit 0; fi
f=${EJOB_APP_URL%%\?*}
f=${f##*/}
[ -n "$f" ] || f=app
if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$f" "$EJOB_APP_URL"; else wget -q -O "$f" "$EJOB_APP_URL"; fi
case "$f" in
*.tar.gz|*.tgz) tar -xzf "$f" ;;
*.tar) tar -xf "$f" ;;
*.zip) unzip -q "$f" ;;
*) chmod +x "$f" ;;
esac
if [ -n "$c" ] && mkdir "$c/app" 2>/dev/null; then cp -R ./. "$c/app/" && touch "$c/complete" || true; fi
`
