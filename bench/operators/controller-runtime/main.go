// The backlog benchmark's Go contender: the controller a Go user writes with controller-runtime for
// what causeway-operator.ts and kopf_operator.py do, a create result `status.create_fn` of
// `{message: "hello <name>"}` on each KopfExample that lacks one, written as a merge patch of the
// status subresource. A manager with 64 workers, an unstructured reconciler, no leader election, no
// metrics or health probes; the kubeconfig from KUBECONFIG.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var kopfExample = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

type createReconciler struct {
	client client.Client
}

func (r *createReconciler) Reconcile(ctx context.Context, request ctrl.Request) (ctrl.Result, error) {
	object := &unstructured.Unstructured{}
	object.SetGroupVersionKind(kopfExample)
	if err := r.client.Get(ctx, request.NamespacedName, object); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, handled, _ := unstructured.NestedFieldNoCopy(object.Object, "status", "create_fn"); handled {
		return ctrl.Result{}, nil
	}
	patch, err := json.Marshal(map[string]any{
		"status": map[string]any{"create_fn": map[string]any{"message": "hello " + request.Name}},
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.client.Status().Patch(ctx, object, client.RawPatch(types.MergePatchType, patch))
}

func main() {
	namespace := flag.String("namespace", "", "the namespace whose KopfExamples to handle")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	log := ctrl.Log.WithName("bench")

	manager, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{*namespace: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		log.Error(err, "unable to set up the manager")
		os.Exit(1)
	}
	watched := &unstructured.Unstructured{}
	watched.SetGroupVersionKind(kopfExample)
	err = ctrl.NewControllerManagedBy(manager).
		For(watched).
		WithOptions(controller.Options{MaxConcurrentReconciles: 64}).
		Complete(&createReconciler{client: manager.GetClient()})
	if err != nil {
		log.Error(err, "unable to set up the controller")
		os.Exit(1)
	}
	if err := manager.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "the manager stopped")
		os.Exit(1)
	}
}
