// Command plainclient is client-go as a program uses it without the
// harness's private copy (issue 36): the kubeconfig loaded as kubectl loads
// it, so refreshed credentials are persisted into that very file. It lists
// the pods of a namespace once and exits 0, or prints the error and exits 1.
// lab/kube/job.sh gives it the OIDC user's read-only kubeconfig: the oidc
// auth-provider refreshes the id-token and cannot write it back ("could not
// persist new tokens: … read-only file system"), the failure the harness's
// copy (e2e/remote/kube/kubeconfig.go) avoids.
//
//	go run ./lab/oidc/plainclient -kubeconfig FILE [-namespace openstack]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/plugin/pkg/client/auth/oidc" // the auth-provider, as kubectl has it compiled in
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig, used in place (required)")
	namespace := flag.String("namespace", "openstack", "the namespace whose pods are listed")
	timeout := flag.Duration("timeout", 30*time.Second, "bound of the call")
	flag.Parse()
	if *kubeconfig == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: plainclient -kubeconfig FILE [-namespace NS] [-timeout D]")
		os.Exit(2)
	}
	n, err := listPods(*kubeconfig, *namespace, *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "plainclient: %s: %v\n", *kubeconfig, err)
		os.Exit(1)
	}
	fmt.Printf("plainclient: %s: %d pod(s) in %s\n", *kubeconfig, n, *namespace)
}

func listPods(kubeconfig, namespace string, timeout time.Duration) (int, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(pods.Items), nil
}
