//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
)

// agentReport mirrors the JSON the test agent's `check` command prints after "RESULT ".
type agentReport struct {
	FileContent     string            `json:"fileContent"`
	FileError       string            `json:"fileError"`
	Username        string            `json:"username"`
	WhoAmIStatus    int               `json:"whoAmIStatus"`
	ConfigMapStatus int               `json:"configMapStatus"`
	ConfigMapData   map[string]string `json:"configMapData"`
	APIError        string            `json:"apiError"`
	OK              bool              `json:"ok"`
}

// newNamespace creates a namespace for one spec, waits for its default ServiceAccount (made
// by kube-controller-manager) and deletes the namespace when the spec ends.
func newNamespace(ctx context.Context) string {
	ns, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		err := clientset.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})
	Eventually(func(g Gomega) {
		_, err := clientset.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Succeed())
	return ns.Name
}

// agentPod is a pod running the test agent with the given arguments, never restarted.
func agentPod(name string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:            "agent",
				Image:           agentImage,
				ImagePullPolicy: corev1.PullNever,
				Args:            args,
			}},
		},
	}
}

func getPod(ctx context.Context, ns, name string) func() (*corev1.Pod, error) {
	return func() (*corev1.Pod, error) {
		return clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	}
}

func podPhase(p *corev1.Pod) corev1.PodPhase { return p.Status.Phase }

// describePod is a failure message with what a developer needs to see first.
func describePod(ctx context.Context, ns, name string) string {
	p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	status, _ := json.MarshalIndent(p.Status, "", "  ")
	events, _ := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s/%s status:\n%s\nevents:\n", ns, name, status)
	for _, e := range events.Items {
		fmt.Fprintf(&b, "  %s %s: %s\n", e.Type, e.Reason, e.Message)
	}
	return b.String()
}

var _ = Describe("the local cluster's real node", func() {
	It("runs an agent that reads a mounted ConfigMap and calls the apiserver with its projected ServiceAccount token", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		const greeting = "hello from the e2e suite"

		By("creating the ConfigMap, and RBAC letting the default ServiceAccount read it")
		_, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "agent-config"},
			Data:       map[string]string{"greeting": greeting},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = clientset.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "read-agent-config"},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{"agent-config"}, Verbs: []string{"get"},
			}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read-agent-config"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-agent-config"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("running the agent with the ConfigMap and an explicitly projected token mounted")
		pod := agentPod("check", "check", "-file", "/etc/agent/greeting", "-configmap", "agent-config",
			"-sa-dir", "/var/run/parley-token")
		pod.Spec.AutomountServiceAccountToken = ptr.To(false)
		pod.Spec.Volumes = []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "agent-config"},
			}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
					{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
					}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
						Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"},
					}}}},
				},
			}}},
		}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/agent", ReadOnly: true},
			{Name: "token", MountPath: "/var/run/parley-token", ReadOnly: true},
		}
		_, err = clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		Eventually(getPod(ctx, ns, pod.Name)).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).
			Should(WithTransform(podPhase, BeElementOf(corev1.PodSucceeded, corev1.PodFailed)),
				func() string { return describePod(ctx, ns, pod.Name) })
		got, err := clientset.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.NodeName).To(Equal(nodeName), "the pod must run on the real node")

		By("reading the agent's report from its logs")
		raw, err := clientset.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		var line string
		for l := range strings.SplitSeq(string(raw), "\n") {
			if rest, ok := strings.CutPrefix(l, "RESULT "); ok {
				line = rest
			}
		}
		Expect(line).NotTo(BeEmpty(), "no RESULT line in the agent's log:\n%s", raw)
		var report agentReport
		Expect(json.Unmarshal([]byte(line), &report)).To(Succeed())

		Expect(report.FileError).To(BeEmpty())
		Expect(report.FileContent).To(Equal(greeting), "the mounted ConfigMap file")
		Expect(report.APIError).To(BeEmpty())
		Expect(report.WhoAmIStatus).To(Equal(201))
		Expect(report.Username).To(Equal("system:serviceaccount:"+ns+":default"),
			"the apiserver must see the pod's ServiceAccount, authenticated by the projected token")
		Expect(report.ConfigMapStatus).To(Equal(200))
		Expect(report.ConfigMapData).To(HaveKeyWithValue("greeting", greeting))
		Expect(report.OK).To(BeTrue())
		Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded))
	})

	It("reports a container that exits 1 under restartPolicy Never as Failed with exit code 1, to a watcher", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		const message = "agent crashed on purpose"

		By("watching the pod before it exists")
		pod := agentPod("crash", "exit", "-code", "1", "-message", message)
		w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		_, err = clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("waiting for the watcher to see phase Failed")
		wctx, cancel := context.WithTimeout(ctx, podTimeout)
		defer cancel()
		var seen []corev1.PodPhase
		last, err := watchtools.UntilWithoutRetry(wctx, w, func(ev watch.Event) (bool, error) {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				return false, fmt.Errorf("unexpected watch event %s: %#v", ev.Type, ev.Object)
			}
			seen = append(seen, p.Status.Phase)
			return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded, nil
		})
		Expect(err).NotTo(HaveOccurred(), func() string { return describePod(ctx, ns, pod.Name) })
		Expect(seen).To(ContainElement(corev1.PodPending), "the watcher saw the pod's life, not only its end")

		p, ok := last.Object.(*corev1.Pod)
		Expect(ok).To(BeTrue())
		Expect(p.Status.Phase).To(Equal(corev1.PodFailed))
		Expect(p.Spec.NodeName).To(Equal(nodeName))
		Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		terminated := p.Status.ContainerStatuses[0].State.Terminated
		Expect(terminated).NotTo(BeNil(), "container state: %+v", p.Status.ContainerStatuses[0].State)
		Expect(terminated.ExitCode).To(Equal(int32(1)))
		Expect(terminated.Reason).To(Equal("Error"))
		Expect(terminated.Message).To(Equal(message), "the termination message the agent wrote")
		Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeZero())
	})

	It("garbage-collects a pod when its owner is deleted (kube-controller-manager)", func(ctx SpecContext) {
		ns := newNamespace(ctx)

		owner, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		owned := agentPod("owned", "serve")
		owned.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}}
		bystander := agentPod("bystander", "serve")
		for _, p := range []*corev1.Pod{owned, bystander} {
			_, err := clientset.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		for _, name := range []string{owned.Name, bystander.Name} {
			Eventually(getPod(ctx, ns, name)).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).
				Should(WithTransform(podPhase, Equal(corev1.PodRunning)),
					func() string { return describePod(ctx, ns, name) })
		}

		By("deleting the owner")
		Expect(clientset.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		})).To(Succeed())

		By("waiting for the owned pod to be gone")
		Eventually(func() error {
			_, err := clientset.CoreV1().Pods(ns).Get(ctx, owned.Name, metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).
			Should(Satisfy(apierrors.IsNotFound), func() string { return describePod(ctx, ns, owned.Name) })

		By("checking the pod without an owner is untouched")
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, bystander.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.DeletionTimestamp).To(BeNil())
		Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
	})
})

var _ = Describe("the pod network", func() {
	It("lets a pod reach a process on the host at the bridge address 10.88.0.1 (where a host-run Session API listens)", func(ctx SpecContext) {
		ns := newNamespace(ctx)

		By("serving HTTP from the test process on 10.88.0.1")
		ln, err := net.Listen("tcp", bridgeAddress+":0")
		Expect(err).NotTo(HaveOccurred())
		remote := make(chan string, 1)
		srv := &http.Server{
			ReadHeaderTimeout: 10 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case remote <- r.RemoteAddr:
				default:
				}
				_, _ = io.WriteString(w, "hello from the host, "+r.URL.Path)
			}),
		}
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Close)

		pod := agentPod("host-get", "get", "http://"+ln.Addr().String()+"/"+ns)
		_, err = clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(getPod(ctx, ns, pod.Name)).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).
			Should(WithTransform(podPhase, BeElementOf(corev1.PodSucceeded, corev1.PodFailed)),
				func() string { return describePod(ctx, ns, pod.Name) })

		raw, err := clientset.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring("RESULT status 200"))
		Expect(string(raw)).To(ContainSubstring("hello from the host, /" + ns))

		var from string
		Expect(remote).To(Receive(&from))
		host, _, err := net.SplitHostPort(from)
		Expect(err).NotTo(HaveOccurred())
		_, podNet, _ := net.ParseCIDR("10.88.0.0/16")
		Expect(podNet.Contains(net.ParseIP(host))).To(BeTrue(), "the request came from %s, not from the pod network", host)
		got, err := clientset.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(host).To(Equal(got.Status.PodIP), "the request came from the pod's own address")
	})
})
